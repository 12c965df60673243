// BatchStore, read side: selected fields, rows and row ranges land as views
// into one leased buffer; payload pieces are verified as their READs land.
#include <algorithm>
#include <cstring>

#include "engine/data/batch_store.h"
#include "engine/data/payload_checksum.h"

namespace tide::data {
namespace {

// One request per checksum piece (8 MiB): backends stripe them, and a reader
// verifies each piece as its request completes.
constexpr uint64_t kChunkBytes = kChecksumChunk;
// Verified reads are submitted as batches of about this many bytes, so the
// first ones are hashed while the later ones are still in flight.
constexpr uint64_t kPipelineBytes = 64ull << 20;

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

}  // namespace

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
    total = alignPayload(total + fields[i]->offsets.length);
    dataAt[i] = total;
    total = alignPayload(total + fields[i]->data.length);
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
  const bool verify = spec.verify && m.payloadChecksums;
  if (!verify) {
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
    if (verify) {
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
      offTotal = alignPayload(offTotal + (spec.rows[k].end - spec.rows[k].begin + 1) * 8);
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
    total = alignPayload(at);
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

}  // namespace tide::data
