#pragma once
// Registrations of local memory and the checks a target makes before any
// remote access touches it: region id, bounds and access key. Backends that
// emulate one-sided access in software (tcp) call acquire() on every remote
// request; the returned lease keeps the registration alive, so
// deregistration waits for accesses already in progress and no access starts
// after it.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "engine/core/status.h"
#include "engine/transport/transport.h"

namespace tide::transport {

class RegionTable;

// Shared hold on one registration; the memory stays registered while it lives.
class RegionLease {
 public:
  RegionLease() = default;
  RegionLease(const RegionLease&) = delete;
  RegionLease& operator=(const RegionLease&) = delete;
  RegionLease(RegionLease&& o) noexcept;
  RegionLease& operator=(RegionLease&& o) noexcept;
  ~RegionLease();

  // Start of the checked range [offset, offset+length).
  char* data() const { return data_; }
  bool valid() const { return table_ != nullptr; }

 private:
  friend class RegionTable;
  void release();
  RegionTable* table_ = nullptr;
  uint32_t id_ = 0;
  char* data_ = nullptr;
};

class RegionTable {
 public:
  explicit RegionTable(int rank) : rank_(rank) {}
  RegionTable(const RegionTable&) = delete;
  RegionTable& operator=(const RegionTable&) = delete;

  // Registers [addr, addr+size) with a fresh id and random access key.
  Result<LocalRegion> add(void* addr, uint64_t size, MemoryKind kind);
  // Unregisters; blocks until every lease on the region is released.
  Status remove(uint32_t id);

  // Checks a remote access (id, bounds, key) and leases the region.
  // kNotFound: no such region; kOutOfRange: outside it; kPermissionDenied: key.
  Result<RegionLease> acquire(uint32_t id, uint64_t offset, uint64_t length, uint64_t key);
  // Local use: bounds only. The pointer is valid while the caller keeps the
  // registration (the API contract for local regions of a pending batch).
  Result<char*> localRange(uint32_t id, uint64_t offset, uint64_t length);

  size_t size() const;

 private:
  friend class RegionLease;
  struct Entry {
    char* addr = nullptr;
    uint64_t size = 0;
    uint64_t key = 0;
    MemoryKind kind = MemoryKind::kHost;
    int leases = 0;
    bool removing = false;
  };
  void releaseLease(uint32_t id);
  Status check(const Entry* e, uint32_t id, uint64_t offset, uint64_t length) const;

  const int rank_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  std::map<uint32_t, Entry> regions_;
  uint32_t nextId_ = 1;
};

// Random 64-bit value for access keys and run tokens (never 0).
uint64_t randomKey();

}  // namespace tide::transport
