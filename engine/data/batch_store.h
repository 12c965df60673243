#pragma once
// BatchStore: publishes batches from this rank's registered memory and reads
// other ranks' batches with one-sided READs into leased buffers.
//
// put(): payloads already in this store's BufferPool go as they are (zero
// copy); other columns are packed (one memcpy per field) into a lease. Then
// checksums, then the manifest is set in the rendezvous store LAST (atomic
// publish). Published payloads must not be modified until removed.
//
// get(): fetches and validates the manifest, plans one READ per contiguous
// range of the selected fields/rows, lands them in one lease and returns a
// Batch of views into it (the lease returns to the pool when the last view
// is dropped). No per-row decode: row access reads the transferred offsets.
//
// Lifetime (two levels): a reader drops its views (its lease) and calls
// done(id); the producer's reap() removes objects whose expected readers are
// all done (manifest replaced by a tombstone, payload memory released).

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/data/batch.h"
#include "engine/data/buffer_pool.h"
#include "engine/data/manifest.h"

namespace tide::data {

struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
};

// Whether put() hashes the payloads into the manifest. Hashing is one more
// pass over every byte on each side; where the transfer itself is a memory
// copy on one host (shm) that pass costs as much as the transfer and guards
// no wire, so kAuto hashes only on transports whose peers may be on other
// hosts (Capabilities::crossHost: tcp, rdma).
enum class ChecksumPolicy { kAuto, kOn, kOff };
Result<ChecksumPolicy> parseChecksumPolicy(const std::string& text);  // auto|on|off

struct ReadSpec {
  std::vector<std::string> fields;            // empty: every field
  std::vector<RowRange> rows;                 // empty: every row
  std::map<std::string, DType> expectDTypes;  // optional schema check
  bool verify = true;  // checksums of whole-field reads, when the manifest has them
};

struct PutOptions {
  int expectedReaders = 1;  // done() calls after which reap() removes the object
};

struct StoreStats {
  uint64_t putBytesPacked = 0;    // bytes copied into leases by put()
  uint64_t putBytesZeroCopy = 0;  // bytes published in place
  uint64_t getBytes = 0;          // bytes transferred by get()
};

class BatchStore {
 public:
  BatchStore(transport::Transport& transport, Store& store, BufferPool& pool,
             double timeoutSeconds = 30);
  BatchStore(const BatchStore&) = delete;
  BatchStore& operator=(const BatchStore&) = delete;

  Status put(const std::string& id, const Batch& batch, const PutOptions& options = {});
  Result<Batch> get(const std::string& id, const ReadSpec& spec = {});
  // get() with a manifest already fetched (e.g. to check its meta first).
  Result<Batch> read(const Manifest& m, const ReadSpec& spec = {});
  // The published manifest (waits up to the timeout for it to appear).
  Result<Manifest> manifest(const std::string& id);
  Result<Manifest> manifest(const std::string& id, double timeoutSeconds);
  // Adds a field to a published batch (this rank holds the new payload).
  Status append(const std::string& id, const std::string& name, const Column& column);
  Status done(const std::string& id);
  // Removes this rank's objects whose readers are all done; returns how many.
  Result<int> reap();
  Status remove(const std::string& id);
  size_t holding() const;
  StoreStats stats() const;
  BufferPool& pool() { return pool_; }
  // Policy of later put()s (append() follows the batch's manifest).
  void setChecksums(ChecksumPolicy policy);
  bool checksumsOnPut() const { return checksums_; }
  double timeoutSeconds() const { return timeout_; }

 private:
  struct Held {
    bool owner = false;  // published the batch (vs. appended a field)
    int expectedReaders = 1;
    std::vector<BufferRef> keep;  // payload owners
  };
  // A segment whose checksum put()/append() still has to compute.
  struct PendingSum {
    size_t field = 0;  // index into Manifest::fields
    bool offsets = false;
    const uint8_t* data = nullptr;
    uint64_t length = 0;
  };
  // Payload segments for `column` (field `index` of `m`), packed into a lease
  // if not in pool memory; their checksums are queued in `sums`.
  Status placeColumn(const std::string& name, const Column& column, Manifest& m, FieldManifest& f,
                     size_t index, Held& held, std::vector<PendingSum>& sums);
  // Hashes every queued segment (all pieces on several threads) into `m`.
  static void fillChecksums(Manifest& m, const std::vector<PendingSum>& sums);
  Status readRanges(const Manifest& m, const std::vector<const FieldManifest*>& fields,
                    const ReadSpec& spec, Batch& out);
  Status readWhole(const Manifest& m, const std::vector<const FieldManifest*>& fields,
                   const ReadSpec& spec, Batch& out);
  // Transfers `reqs` (grouped, several batches in flight) and hashes each
  // request's bytes into hashes[reqSegment[r]] as its group completes.
  Status transferVerified(const std::vector<transport::Request>& reqs,
                          const std::vector<size_t>& reqSegment, const Lease& lease,
                          std::vector<std::vector<uint64_t>>& hashes);
  Status importRegions(const Manifest& m);
  Status transfer(std::vector<transport::Request>& requests);
  uint32_t regionIndex(Manifest& m, const transport::RemoteRegion& r);

  transport::Transport& transport_;
  Store& store_;
  BufferPool& pool_;
  double timeout_;
  bool checksums_;
  mutable std::mutex mu_;
  std::map<std::string, Held> held_;
  std::set<std::string> imported_;
  StoreStats stats_;
};

std::string manifestKey(const std::string& id);

}  // namespace tide::data
