#include "engine/data/batch_store.h"

#include <algorithm>
#include <cstring>

#include "engine/data/payload_checksum.h"

namespace tide::data {
namespace {

std::string doneKey(const std::string& id) {
  return "data/" + id + "/done";
}

bool inPool(const BufferPool& pool, std::span<const uint8_t> b) {
  if (b.empty()) return false;
  auto loc = pool.locate(b.data(), b.size());
  return loc.isOk() && loc->offset % kPayloadAlign == 0;
}

// Copies every column not already in pool memory into ONE lease (one memcpy
// per buffer) and returns the batch with those columns as views into it.
Result<Batch> packBatch(BufferPool& pool, const Batch& batch, uint64_t& packed) {
  struct Need {
    size_t col;
    uint64_t dataAt, offAt;
  };
  std::vector<Need> needs;
  uint64_t total = 0;
  for (size_t i = 0; i < batch.columns().size(); ++i) {
    const Column& c = batch.columns()[i].second;
    bool ok = inPool(pool, c.payload()) &&
              (!c.isRagged() || inPool(pool, {c.offsetsRef().data, c.offsetsRef().size}));
    if (ok) continue;
    Need n{i, total, 0};
    total = alignPayload(total + c.payloadBytes());
    n.offAt = total;
    total = alignPayload(total + c.offsetsRef().size * (c.isRagged() ? 1 : 0));
    needs.push_back(n);
  }
  if (needs.empty()) return batch;
  TIDE_ASSIGN_OR_RETURN(Lease l, pool.acquire(std::max(total, kPayloadAlign)));
  auto lease = std::make_shared<Lease>(std::move(l));
  BufferRef whole{lease, lease->data(), lease->size()};
  Batch out(batch.rows());
  out.meta() = batch.meta();
  size_t k = 0;
  for (size_t i = 0; i < batch.columns().size(); ++i) {
    const auto& [name, c] = batch.columns()[i];
    if (k == needs.size() || needs[k].col != i) {
      TIDE_RETURN_IF_ERROR(out.add(name, c));
      continue;
    }
    const Need& n = needs[k++];
    auto payload = c.payload();
    if (!payload.empty()) std::memcpy(lease->data() + n.dataAt, payload.data(), payload.size());
    packed += payload.size();
    Result<Column> col = Status::ok();
    if (!c.isRagged()) {
      col = Column::dense(c.dtype(), c.shape(), whole.sub(n.dataAt, payload.size()));
    } else {
      std::memcpy(lease->data() + n.offAt, c.offsetsRef().data, c.offsetsRef().size);
      packed += c.offsetsRef().size;
      BufferRef offs = whole.sub(n.offAt, c.offsetsRef().size);
      BufferRef vals = whole.sub(n.dataAt, payload.size());
      col = c.kind() == ColumnKind::kObject
                ? Column::object(vals, offs, c.offsets().front())
                : Column::ragged(c.dtype(), c.shape(), vals, offs, c.offsets().front());
    }
    if (!col.isOk()) return col.status().withContext("field '" + name + "'");
    TIDE_RETURN_IF_ERROR(out.add(name, std::move(col).value()));
  }
  return out;
}

}  // namespace

std::string manifestKey(const std::string& id) {
  return "data/" + id + "/manifest";
}

BatchStore::BatchStore(transport::Transport& transport, Store& store, BufferPool& pool,
                       double timeoutSeconds)
    : transport_(transport), store_(store), pool_(pool), timeout_(timeoutSeconds) {
  setChecksums(ChecksumPolicy::kAuto);
}

void BatchStore::setChecksums(ChecksumPolicy policy) {
  checksums_ = policy == ChecksumPolicy::kOn ||
               (policy == ChecksumPolicy::kAuto && transport_.capabilities().crossHost);
}

Result<ChecksumPolicy> parseChecksumPolicy(const std::string& text) {
  if (text == "auto") return ChecksumPolicy::kAuto;
  if (text == "on") return ChecksumPolicy::kOn;
  if (text == "off") return ChecksumPolicy::kOff;
  return TIDE_ERROR(Code::kInvalidArgument,
                    "checksums must be auto, on or off (got '" + text + "')");
}

uint32_t BatchStore::regionIndex(Manifest& m, const transport::RemoteRegion& r) {
  for (uint32_t i = 0; i < m.regions.size(); ++i)
    if (m.regions[i] == r) return i;
  m.regions.push_back(r);
  return static_cast<uint32_t>(m.regions.size() - 1);
}

void BatchStore::fillChecksums(Manifest& m, const std::vector<PendingSum>& sums) {
  std::vector<std::vector<uint64_t>> hashes(sums.size());
  std::vector<HashJob> jobs;
  for (size_t i = 0; i < sums.size(); ++i) {
    hashes[i].resize(pieceCount(sums[i].length));
    for (uint64_t k = 0; k < hashes[i].size(); ++k) {
      uint64_t at = k * kChecksumChunk;
      jobs.push_back(
          {sums[i].data + at, std::min(kChecksumChunk, sums[i].length - at), &hashes[i][k]});
    }
  }
  hashJobs(jobs, checksumThreads());
  for (size_t i = 0; i < sums.size(); ++i) {
    FieldManifest& f = m.fields[sums[i].field];
    (sums[i].offsets ? f.offsets : f.data).checksum = combinePieceHashes(hashes[i]);
  }
}

Status BatchStore::placeColumn(const std::string& name, const Column& column, Manifest& m,
                               FieldManifest& f, size_t index, Held& held,
                               std::vector<PendingSum>& sums) {
  TIDE_RETURN_IF_ERROR(column.validate().withContext("field '" + name + "'"));
  f.name = name;
  f.kind = column.kind();
  f.dtype = column.dtype();
  f.dims = column.shape();
  if (column.isRagged()) {
    auto off = column.offsets();
    f.valueBase = off.front();
    f.valueCount = off.back() - off.front();
  }
  // Segments not already in this pool's memory are packed into one lease.
  struct Piece {
    Segment* seg;
    std::span<const uint8_t> bytes;
    bool packed;
    uint64_t at;
  };
  std::vector<Piece> pieces;
  pieces.push_back({&f.data, column.payload(), false, 0});
  if (column.isRagged())
    pieces.push_back({&f.offsets, {column.offsetsRef().data, column.offsetsRef().size}, false, 0});
  uint64_t packBytes = 0;
  for (auto& p : pieces) {
    auto loc = pool_.locate(p.bytes.data(), p.bytes.size());
    if (!p.bytes.empty() && loc.isOk() && loc->offset % kPayloadAlign == 0) {
      p.seg->region = regionIndex(m, *loc->descriptor);
      p.seg->offset = loc->offset;
    } else {
      p.packed = true;
      p.at = packBytes;
      packBytes = alignPayload(packBytes + p.bytes.size());
    }
    p.seg->length = p.bytes.size();
  }
  bool anyPacked = std::any_of(pieces.begin(), pieces.end(), [](auto& p) { return p.packed; });
  std::shared_ptr<Lease> lease;
  if (anyPacked) {
    TIDE_ASSIGN_OR_RETURN(Lease l, pool_.acquire(std::max<uint64_t>(packBytes, kPayloadAlign)));
    lease = std::make_shared<Lease>(std::move(l));
    auto loc = pool_.locate(lease->data(), lease->size());
    if (!loc.isOk()) return loc.status();
    uint32_t ri = regionIndex(m, *loc->descriptor);
    for (auto& p : pieces) {
      if (!p.packed) continue;
      if (!p.bytes.empty()) std::memcpy(lease->data() + p.at, p.bytes.data(), p.bytes.size());
      p.seg->region = ri;
      p.seg->offset = loc->offset + p.at;
      stats_.putBytesPacked += p.bytes.size();
    }
    held.keep.push_back(BufferRef{lease, lease->data(), lease->size()});
  }
  for (auto& p : pieces) {
    if (!p.packed) stats_.putBytesZeroCopy += p.bytes.size();
    const uint8_t* src = p.packed ? lease->data() + p.at : p.bytes.data();
    sums.push_back({index, p.seg == &f.offsets, src, p.bytes.size()});
  }
  held.keep.push_back(column.data());
  if (column.isRagged()) held.keep.push_back(column.offsetsRef());
  return Status::ok();
}

Status BatchStore::put(const std::string& id, const Batch& batch, const PutOptions& options) {
  if (id.empty() || id.size() > kMaxNameBytes)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "batch id must be 1.." + std::to_string(kMaxNameBytes) + " bytes");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_.count(id)) return TIDE_ERROR(Code::kAlreadyExists, "batch '" + id + "' is published");
  }
  Manifest m;
  m.id = id;
  m.rows = batch.rows();
  m.metaJson = batch.meta().dump();
  Held held;
  held.owner = true;
  held.expectedReaders = options.expectedReaders;
  for (const auto& [name, column] : batch.columns())
    TIDE_RETURN_IF_ERROR(column.validate().withContext("field '" + name + "'"));
  uint64_t packed = 0;
  TIDE_ASSIGN_OR_RETURN(Batch placed, packBatch(pool_, batch, packed));
  stats_.putBytesPacked += packed;
  std::vector<PendingSum> sums;
  for (const auto& [name, column] : placed.columns()) {
    FieldManifest f;
    TIDE_RETURN_IF_ERROR(placeColumn(name, column, m, f, m.fields.size(), held, sums));
    m.fields.push_back(std::move(f));
  }
  m.payloadChecksums = checksums_;
  if (checksums_) fillChecksums(m, sums);
  stats_.putBytesZeroCopy -= packed;  // placed from the pack lease, counted above
  TIDE_RETURN_IF_ERROR(m.validate().withContext("batch '" + id + "'"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_[id] = std::move(held);
  }
  // Last: once the manifest is visible, every payload is in place.
  return store_.set(manifestKey(id), m.encode());
}

Result<Manifest> BatchStore::manifest(const std::string& id) {
  return manifest(id, timeout_);
}

Result<Manifest> BatchStore::manifest(const std::string& id, double timeoutSeconds) {
  auto bytes = store_.get(manifestKey(id), timeoutSeconds);
  if (!bytes.isOk()) return bytes.status().withContext("batch '" + id + "'");
  if (bytes->empty()) return TIDE_ERROR(Code::kNotFound, "batch '" + id + "' was removed");
  auto m = Manifest::decode(*bytes);
  if (!m.isOk()) return m.status().withContext("batch '" + id + "'");
  if (m->id != id)
    return TIDE_ERROR(Code::kDataLoss,
                      "manifest under '" + id + "' describes batch '" + m->id + "'");
  return m;
}

Status BatchStore::importRegions(const Manifest& m) {
  for (const auto& r : m.regions) {
    std::string key = r.serialize();
    if (imported_.count(key)) continue;
    TIDE_RETURN_IF_ERROR(transport_.importRegion(r));
    imported_.insert(key);
  }
  return Status::ok();
}

Status BatchStore::transfer(std::vector<transport::Request>& requests) {
  if (requests.empty()) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(transport::BatchId b, transport_.submit(requests));
  return transport_.wait(b, timeout_);
}

Result<Batch> BatchStore::get(const std::string& id, const ReadSpec& spec) {
  TIDE_ASSIGN_OR_RETURN(Manifest m, manifest(id));
  return read(m, spec);
}

Status BatchStore::append(const std::string& id, const std::string& name, const Column& column) {
  TIDE_ASSIGN_OR_RETURN(Manifest m, manifest(id));
  if (m.find(name) != nullptr)
    return TIDE_ERROR(Code::kAlreadyExists, "batch '" + id + "' already has field '" + name + "'");
  if (column.rows() != m.rows)
    return TIDE_ERROR(Code::kInvalidArgument, "appended field '" + name + "' has " +
                                                  std::to_string(column.rows()) + " rows, batch '" +
                                                  id + "' has " + std::to_string(m.rows));
  Held held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(id);
    if (it != held_.end()) held.expectedReaders = it->second.expectedReaders;
  }
  FieldManifest f;
  std::vector<PendingSum> sums;
  TIDE_RETURN_IF_ERROR(placeColumn(name, column, m, f, m.fields.size(), held, sums));
  m.fields.push_back(std::move(f));
  if (m.payloadChecksums) fillChecksums(m, sums);
  ++m.generation;
  TIDE_RETURN_IF_ERROR(m.validate().withContext("batch '" + id + "'"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    Held& h = held_[id];
    if (h.keep.empty()) h.expectedReaders = held.expectedReaders;
    for (auto& k : held.keep) h.keep.push_back(std::move(k));
  }
  return store_.set(manifestKey(id), m.encode());
}

Status BatchStore::done(const std::string& id) {
  return store_.add(doneKey(id), 1).status();
}

Result<int> BatchStore::reap() {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, h] : held_) ids.push_back(id);
  }
  int removed = 0;
  for (const auto& id : ids) {
    int expected;
    {
      std::lock_guard<std::mutex> lock(mu_);
      expected = held_[id].expectedReaders;
    }
    TIDE_ASSIGN_OR_RETURN(int64_t readers, store_.add(doneKey(id), 0));
    if (readers < expected) continue;
    TIDE_RETURN_IF_ERROR(remove(id));
    ++removed;
  }
  return removed;
}

Status BatchStore::remove(const std::string& id) {
  Held h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(id);
    if (it == held_.end())
      return TIDE_ERROR(Code::kNotFound, "batch '" + id + "' is not held here");
    h = std::move(it->second);
    held_.erase(it);
  }
  // The tombstone goes first, so no new reader starts on memory being freed.
  if (h.owner) TIDE_RETURN_IF_ERROR(store_.set(manifestKey(id), ""));
  return Status::ok();
}

size_t BatchStore::holding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

StoreStats BatchStore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace tide::data
