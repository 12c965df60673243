#include "engine/data/batch_store.h"

#include <algorithm>
#include <cstring>

#include "engine/data/payload_checksum.h"

namespace tide::data {
namespace {

// One request per checksum piece (8 MiB): backends stripe them, and a reader
// verifies each piece as its request completes.
constexpr uint64_t kChunkBytes = kChecksumChunk;
// Verified reads are submitted as batches of about this many bytes, so the
// first ones are hashed while the later ones are still in flight.
constexpr uint64_t kPipelineBytes = 64ull << 20;

uint64_t alignUp(uint64_t v) {
  return (v + kPayloadAlign - 1) / kPayloadAlign * kPayloadAlign;
}

std::string doneKey(const std::string& id) {
  return "data/" + id + "/done";
}

// Appends READs of remote [off, off+len) into local [dst, dst+len), chunked.
void addReads(std::vector<transport::Request>& out, const transport::RemoteRegion& remote,
              uint64_t remoteOffset, const Lease& lease, uint64_t dst, uint64_t length) {
  for (uint64_t done = 0; done < length; done += kChunkBytes) {
    transport::Request r;
    r.op = transport::Op::kRead;
    r.localRegion = lease.regionId();
    r.localOffset = lease.regionOffset() + dst + done;
    r.peer = remote.rank;
    r.remoteRegion = remote.id;
    r.remoteOffset = remoteOffset + done;
    r.length = std::min(kChunkBytes, length - done);
    out.push_back(r);
  }
}

Result<Column> makeColumn(const FieldManifest& f, int64_t rows, BufferRef data, BufferRef offsets,
                          int64_t valueBase) {
  if (f.kind == ColumnKind::kDense) {
    auto dims = f.dims;
    dims[0] = rows;
    return Column::dense(f.dtype, std::move(dims), std::move(data));
  }
  if (f.kind == ColumnKind::kObject)
    return Column::object(std::move(data), std::move(offsets), valueBase);
  return Column::ragged(f.dtype, f.dims, std::move(data), std::move(offsets), valueBase);
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
    total = alignUp(total + c.payloadBytes());
    n.offAt = total;
    total = alignUp(total + c.offsetsRef().size * (c.isRagged() ? 1 : 0));
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
    : transport_(transport), store_(store), pool_(pool), timeout_(timeoutSeconds) {}

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
      packBytes = alignUp(packBytes + p.bytes.size());
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
  fillChecksums(m, sums);
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

Result<Batch> BatchStore::read(const Manifest& m, const ReadSpec& spec) {
  const std::string& id = m.id;
  std::vector<const FieldManifest*> fields;
  if (spec.fields.empty()) {
    for (const auto& f : m.fields) fields.push_back(&f);
  } else {
    for (const auto& name : spec.fields) {
      const FieldManifest* f = m.find(name);
      if (f == nullptr) {
        std::string have;
        for (const auto& g : m.fields) have += (have.empty() ? "" : ", ") + g.name;
        return TIDE_ERROR(Code::kNotFound,
                          "batch '" + id + "' has no field '" + name + "' (fields: " + have + ")");
      }
      fields.push_back(f);
    }
  }
  for (const auto& [name, dtype] : spec.expectDTypes) {
    const FieldManifest* f = m.find(name);
    if (f != nullptr && f->dtype != dtype)
      return TIDE_ERROR(Code::kInvalidArgument, "batch '" + id + "' field '" + name + "' is " +
                                                    dtypeName(f->dtype) + ", expected " +
                                                    dtypeName(dtype));
  }
  for (const auto& r : spec.rows)
    if (r.begin < 0 || r.end < r.begin || r.end > m.rows)
      return TIDE_ERROR(Code::kOutOfRange, "batch '" + id + "': row range [" +
                                               std::to_string(r.begin) + ", " +
                                               std::to_string(r.end) + ") outside " +
                                               std::to_string(m.rows) + " rows");
  TIDE_RETURN_IF_ERROR(importRegions(m));
  Batch out;
  Status s = spec.rows.empty() ? readWhole(m, fields, spec, out) : readRanges(m, fields, spec, out);
  if (!s.isOk()) return s.withContext("batch '" + id + "'");
  out.meta() = nlohmann::json::parse(m.metaJson);
  return out;
}

Status BatchStore::readWhole(const Manifest& m, const std::vector<const FieldManifest*>& fields,
                             const ReadSpec& spec, Batch& out) {
  std::vector<uint64_t> dataAt(fields.size()), offAt(fields.size());
  uint64_t total = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    offAt[i] = total;
    total = alignUp(total + fields[i]->offsets.length);
    dataAt[i] = total;
    total = alignUp(total + fields[i]->data.length);
  }
  TIDE_ASSIGN_OR_RETURN(Lease l, pool_.acquire(std::max(total, kPayloadAlign)));
  auto lease = std::make_shared<Lease>(std::move(l));
  // One request per checksum piece; segment 2i is field i's data, 2i+1 its offsets.
  std::vector<transport::Request> reqs;
  std::vector<size_t> reqSegment;
  std::vector<std::vector<uint64_t>> hashes(2 * fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldManifest& f = *fields[i];
    if (f.kind != ColumnKind::kDense)
      addReads(reqs, m.regions[f.offsets.region], f.offsets.offset, *lease, offAt[i],
               f.offsets.length);
    reqSegment.resize(reqs.size(), 2 * i + 1);
    addReads(reqs, m.regions[f.data.region], f.data.offset, *lease, dataAt[i], f.data.length);
    reqSegment.resize(reqs.size(), 2 * i);
    hashes[2 * i].reserve(pieceCount(f.data.length));
    hashes[2 * i + 1].reserve(pieceCount(f.offsets.length));
  }
  if (!spec.verify) {
    TIDE_RETURN_IF_ERROR(transfer(reqs));
  } else {
    TIDE_RETURN_IF_ERROR(transferVerified(reqs, reqSegment, *lease, hashes));
  }
  stats_.getBytes += total;
  BufferRef whole{lease, lease->data(), lease->size()};
  out = Batch(m.rows);
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldManifest& f = *fields[i];
    BufferRef data = whole.sub(dataAt[i], f.data.length);
    BufferRef offs = whole.sub(offAt[i], f.offsets.length);
    if (spec.verify) {
      if (combinePieceHashes(hashes[2 * i]) != f.data.checksum)
        return TIDE_ERROR(Code::kDataLoss, "field '" + f.name + "' payload checksum mismatch");
      if (f.kind != ColumnKind::kDense &&
          combinePieceHashes(hashes[2 * i + 1]) != f.offsets.checksum)
        return TIDE_ERROR(Code::kDataLoss, "field '" + f.name + "' offsets checksum mismatch");
    }
    auto col = makeColumn(f, m.rows, data, offs, f.valueBase);
    if (!col.isOk()) return col.status().withContext("field '" + f.name + "'");
    if (col->isRagged() && (col->offsets().front() != f.valueBase ||
                            col->offsets().back() - f.valueBase != f.valueCount))
      return TIDE_ERROR(Code::kDataLoss,
                        "field '" + f.name + "' offsets disagree with the manifest's value count");
    TIDE_RETURN_IF_ERROR(out.add(f.name, std::move(col).value()));
  }
  return Status::ok();
}

Status BatchStore::transferVerified(const std::vector<transport::Request>& reqs,
                                    const std::vector<size_t>& reqSegment, const Lease& lease,
                                    std::vector<std::vector<uint64_t>>& hashes) {
  // Submit every group first, then hash each group's pieces as it lands while
  // the later groups are still moving. Pieces of one segment stay in order.
  std::vector<size_t> groupEnd;
  uint64_t bytes = 0;
  for (size_t r = 0; r < reqs.size(); ++r) {
    bytes += reqs[r].length;
    if (bytes >= kPipelineBytes || r + 1 == reqs.size()) {
      groupEnd.push_back(r + 1);
      bytes = 0;
    }
  }
  std::vector<transport::BatchId> batches;
  Status first;
  for (size_t g = 0; g < groupEnd.size() && first.isOk(); ++g) {
    size_t b = g == 0 ? 0 : groupEnd[g - 1];
    auto id = transport_.submit(std::span(reqs).subspan(b, groupEnd[g] - b));
    if (id.isOk()) batches.push_back(*id);
    if (!id.isOk()) first = id.status();
  }
  for (size_t g = 0; g < batches.size(); ++g) {
    Status s = transport_.wait(batches[g], timeout_);
    if (!s.isOk() && first.isOk()) first = s;
    if (!first.isOk()) continue;  // still wait for the rest: they write into the lease
    size_t b = g == 0 ? 0 : groupEnd[g - 1];
    std::vector<HashJob> jobs;
    for (size_t r = b; r < groupEnd[g]; ++r) {
      auto& h = hashes[reqSegment[r]];
      h.push_back(0);
      jobs.push_back(
          {lease.data() + (reqs[r].localOffset - lease.regionOffset()), reqs[r].length, &h.back()});
    }
    hashJobs(jobs, checksumThreads());
  }
  return first;
}

Status BatchStore::readRanges(const Manifest& m, const std::vector<const FieldManifest*>& fields,
                              const ReadSpec& spec, Batch& out) {
  int64_t rows = 0;
  for (const auto& r : spec.rows) rows += r.end - r.begin;
  // Phase 1: the offsets slices of ragged fields, to learn the value ranges.
  std::vector<uint64_t> offAt(fields.size() * spec.rows.size());
  uint64_t offTotal = 0;
  for (size_t i = 0; i < fields.size(); ++i)
    for (size_t k = 0; k < spec.rows.size() && fields[i]->kind != ColumnKind::kDense; ++k) {
      offAt[i * spec.rows.size() + k] = offTotal;
      offTotal = alignUp(offTotal + (spec.rows[k].end - spec.rows[k].begin + 1) * 8);
    }
  std::shared_ptr<Lease> offLease;
  if (offTotal > 0) {
    TIDE_ASSIGN_OR_RETURN(Lease l, pool_.acquire(offTotal));
    offLease = std::make_shared<Lease>(std::move(l));
    std::vector<transport::Request> reqs;
    for (size_t i = 0; i < fields.size(); ++i)
      for (size_t k = 0; k < spec.rows.size() && fields[i]->kind != ColumnKind::kDense; ++k)
        addReads(reqs, m.regions[fields[i]->offsets.region],
                 fields[i]->offsets.offset + spec.rows[k].begin * 8, *offLease,
                 offAt[i * spec.rows.size() + k], (spec.rows[k].end - spec.rows[k].begin + 1) * 8);
    TIDE_RETURN_IF_ERROR(transfer(reqs));
  }
  auto offSlice = [&](size_t i, size_t k) {
    return reinterpret_cast<const int64_t*>(offLease->data() + offAt[i * spec.rows.size() + k]);
  };
  // Phase 2: value bytes of every (field, range), packed per field.
  struct Piece {
    uint64_t src, len, dst;
  };
  std::vector<std::vector<Piece>> pieces(fields.size());
  std::vector<uint64_t> dataAt(fields.size()), dataLen(fields.size());
  uint64_t total = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldManifest& f = *fields[i];
    uint64_t item = f.itemBytes();
    dataAt[i] = total;
    uint64_t at = total;
    for (size_t k = 0; k < spec.rows.size(); ++k) {
      const RowRange& r = spec.rows[k];
      uint64_t b, e;
      if (f.kind == ColumnKind::kDense) {
        b = r.begin * item;
        e = r.end * item;
      } else {
        const int64_t* o = offSlice(i, k);
        int64_t n = r.end - r.begin;
        for (int64_t j = 0; j < n; ++j)
          if (o[j + 1] < o[j])
            return TIDE_ERROR(Code::kDataLoss, "field '" + f.name +
                                                   "' offsets not monotonic at row " +
                                                   std::to_string(r.begin + j));
        if (o[0] < f.valueBase || o[n] - f.valueBase > f.valueCount)
          return TIDE_ERROR(Code::kDataLoss,
                            "field '" + f.name + "' offsets point outside its payload");
        b = (o[0] - f.valueBase) * item;
        e = (o[n] - f.valueBase) * item;
      }
      pieces[i].push_back({f.data.offset + b, e - b, at});
      at += e - b;
    }
    dataLen[i] = at - dataAt[i];
    total = alignUp(at);
  }
  TIDE_ASSIGN_OR_RETURN(Lease l, pool_.acquire(std::max(total, kPayloadAlign)));
  auto lease = std::make_shared<Lease>(std::move(l));
  std::vector<transport::Request> reqs;
  for (size_t i = 0; i < fields.size(); ++i)
    for (const Piece& p : pieces[i])
      addReads(reqs, m.regions[fields[i]->data.region], p.src, *lease, p.dst, p.len);
  TIDE_RETURN_IF_ERROR(transfer(reqs));
  stats_.getBytes += total + offTotal;
  (void)spec.verify;  // partial payloads have no stored checksum to verify against
  BufferRef whole{lease, lease->data(), lease->size()};
  out = Batch(rows);
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldManifest& f = *fields[i];
    BufferRef data = whole.sub(dataAt[i], dataLen[i]);
    BufferRef offs;
    int64_t base = 0;
    if (f.kind != ColumnKind::kDense && spec.rows.size() == 1) {
      // One range: the transferred offsets slice is used as is.
      offs = BufferRef{offLease, reinterpret_cast<const uint8_t*>(offSlice(i, 0)),
                       static_cast<uint64_t>(rows + 1) * 8};
      base = offSlice(i, 0)[0];
    } else if (f.kind != ColumnKind::kDense) {
      // Several ranges: rebase offsets into one array (O(rows) int64, values untouched).
      std::vector<int64_t> merged;
      merged.reserve(rows + 1);
      merged.push_back(0);
      for (size_t k = 0; k < spec.rows.size(); ++k) {
        const int64_t* o = offSlice(i, k);
        for (int64_t j = 0; j < spec.rows[k].end - spec.rows[k].begin; ++j)
          merged.push_back(merged.back() + o[j + 1] - o[j]);
      }
      offs = BufferRef::ownVector(std::move(merged));
    }
    auto col = makeColumn(f, rows, data, offs, base);
    if (!col.isOk()) return col.status().withContext("field '" + f.name + "'");
    TIDE_RETURN_IF_ERROR(out.add(f.name, std::move(col).value()));
  }
  return Status::ok();
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
  fillChecksums(m, sums);
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
