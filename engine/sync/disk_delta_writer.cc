#include "engine/sync/disk_delta_writer.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "engine/core/clock.h"
#include "engine/sync/delta/delta_frame.h"

namespace tide::sync {

uint64_t DiskDeltaSlice::totalBytes() const {
  uint64_t s = 0;
  for (auto b : tensorBytes) s += b;
  return s;
}

Status DiskDeltaSlice::validate() const {
  if (tensorBytes.size() != elemBytes.size())
    return TIDE_ERROR(Code::kInvalidArgument, "slice: tensorBytes and elemBytes differ in length");
  for (size_t i = 0; i < tensorBytes.size(); ++i) {
    uint32_t e = elemBytes[i];
    if ((e != 1 && e != 2 && e != 4 && e != 8) || tensorBytes[i] % e)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "slice: tensor " + std::to_string(i) + " has a bad element size");
  }
  for (const auto& item : items)
    for (auto t : item)
      if (t >= tensorBytes.size())
        return TIDE_ERROR(Code::kInvalidArgument, "slice: item names a missing tensor");
  return Status::ok();
}

std::vector<std::vector<uint32_t>> DiskDeltaSlice::effectiveItems() const {
  if (!items.empty()) return items;
  std::vector<std::vector<uint32_t>> out(tensorBytes.size());
  for (uint32_t i = 0; i < out.size(); ++i) out[i] = {i};
  return out;
}

uint64_t sliceHash(std::span<const std::span<const uint8_t>> tensors) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (auto t : tensors) XXH3_64bits_update(st, t.data(), t.size());
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

DiskDeltaWriter::DiskDeltaWriter(DiskDeltaOptions options, uint32_t rank, DiskDeltaSlice slice)
    : options_(std::move(options)), rank_(rank), slice_(std::move(slice)) {}

Status DiskDeltaWriter::seed(uint64_t version, uint64_t baseVersion,
                             std::span<const std::span<const uint8_t>> tensors) {
  TIDE_RETURN_IF_ERROR(slice_.validate());
  if (tensors.size() != slice_.tensorBytes.size())
    return TIDE_ERROR(Code::kInvalidArgument, "seed: wrong tensor count");
  prev_.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].size() != slice_.tensorBytes[i])
      return TIDE_ERROR(Code::kInvalidArgument, "seed: wrong size of tensor " + std::to_string(i));
    prev_[i].assign(tensors[i].begin(), tensors[i].end());
  }
  havePrev_ = true;
  prevVersion_ = version;
  lastBase_ = baseVersion;
  return Status::ok();
}

Result<DiskDeltaWriteStats> DiskDeltaWriter::writeStep(
    uint64_t version, std::span<const std::span<const uint8_t>> tensors) {
  TIDE_RETURN_IF_ERROR(slice_.validate());
  if (options_.baseEvery == 0)
    return TIDE_ERROR(Code::kInvalidArgument, "disk-delta: baseEvery must be >= 1");
  if (tensors.size() != slice_.tensorBytes.size())
    return TIDE_ERROR(Code::kInvalidArgument, "disk-delta: wrong tensor count");
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].size() != slice_.tensorBytes[i])
      return TIDE_ERROR(Code::kInvalidArgument,
                        "disk-delta: wrong size of tensor " + std::to_string(i));
  const bool base = version % options_.baseEvery == 0;
  if (!base && (!havePrev_ || prevVersion_ + 1 != version))
    return TIDE_ERROR(Code::kFailedPrecondition,
                      "disk-delta: version " + std::to_string(version) +
                          " is a delta but the writer holds " +
                          (havePrev_ ? "version " + std::to_string(prevVersion_) : "no version") +
                          " (seed it or write a base version)");

  DiskDeltaWriteStats stats;
  stats.sliceBytes = slice_.totalBytes();
  stats.baseVersion = base ? version : lastBase_;
  Stopwatch sw;
  scratch_.clear();
  if (base) {
    scratch_.reserve(stats.sliceBytes);
    for (auto t : tensors) scratch_.insert(scratch_.end(), t.begin(), t.end());
    for (size_t i = 0; i < tensors.size(); ++i)
      stats.elements += tensors[i].size() / slice_.elemBytes[i];
    stats.changed = stats.elements;
  } else {
    std::vector<TensorVersions> tv(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) tv[i] = {prev_[i], tensors[i], slice_.elemBytes[i]};
    TIDE_ASSIGN_OR_RETURN(auto fs, encodeFrame(tv, slice_.effectiveItems(), version - 1, version,
                                               options_.codec, scratch_));
    stats.changed = fs.changed;
    stats.elements = fs.elements;
  }
  stats.encodeSeconds = sw.seconds();

  auto kind = base ? DiskDeltaKind::kBase : DiskDeltaKind::kDelta;
  sw.reset();
  TIDE_RETURN_IF_ERROR(writeFileDurable(options_.dir + "/" + rankFileName(version, rank_, kind),
                                        scratch_, options_.io));
  stats.writeSeconds = sw.seconds();
  stats.record.rank = rank_;
  stats.record.kind = kind;
  stats.record.bytes = scratch_.size();
  stats.record.fileHash = XXH3_64bits(scratch_.data(), scratch_.size());
  stats.record.versionHash = sliceHash(tensors);

  // Durable: this version is now the base of the next delta.
  prev_.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) prev_[i].assign(tensors[i].begin(), tensors[i].end());
  havePrev_ = true;
  prevVersion_ = version;
  lastBase_ = stats.baseVersion;
  return stats;
}

Status commitVersion(const DiskDeltaOptions& options, uint64_t version, uint64_t baseVersion,
                     std::vector<DiskDeltaFile> records) {
  DiskDeltaManifest m;
  m.version = version;
  m.baseVersion = baseVersion;
  m.ranks = static_cast<uint32_t>(records.size());
  std::sort(records.begin(), records.end(),
            [](const DiskDeltaFile& a, const DiskDeltaFile& b) { return a.rank < b.rank; });
  for (uint32_t r = 0; r < records.size(); ++r) {
    const auto& f = records[r];
    if (f.rank != r)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "commit: missing record of rank " + std::to_string(r));
    std::string path = options.dir + "/" + rankFileName(version, r, f.kind);
    struct stat sb;
    if (::stat(path.c_str(), &sb) != 0)
      return TIDE_ERROR(Code::kDataLoss, "commit: rank file missing: " + path);
    if (static_cast<uint64_t>(sb.st_size) != f.bytes)
      return TIDE_ERROR(Code::kDataLoss, "commit: rank file has the wrong size: " + path);
  }
  m.files = std::move(records);
  std::string text = m.serialize();
  // Parse what we are about to publish: a record set that does not form a
  // valid manifest (mixed kinds) must fail here, not in every reader.
  TIDE_RETURN_IF_ERROR(DiskDeltaManifest::parse(text).status());
  FileIoOptions io;  // small file: no cap, plain I/O
  io.useUring = false;
  return writeFileDurable(options.dir + "/" + manifestName(version),
                          {reinterpret_cast<const uint8_t*>(text.data()), text.size()}, io);
}

Status publishAndCommit(Store& store, const DiskDeltaOptions& options, uint32_t ranks,
                        uint64_t version, const DiskDeltaWriteStats& mine, double timeoutSeconds) {
  std::string prefix = "disk-delta/" + std::to_string(version) + "/";
  TIDE_RETURN_IF_ERROR(store.set(prefix + std::to_string(mine.record.rank), mine.record.encode()));
  if (mine.record.rank != 0) return Status::ok();
  auto deadline = Deadline::after(timeoutSeconds);
  std::vector<DiskDeltaFile> records;
  for (uint32_t r = 0; r < ranks; ++r) {
    auto v = store.get(prefix + std::to_string(r),
                       std::chrono::duration<double>(deadline.remaining()).count());
    if (!v.isOk())
      return TIDE_ERROR(v.status().code() == Code::kTimeout ? Code::kTimeout : v.status().code(),
                        "disk-delta: version " + std::to_string(version) + " not committed: rank " +
                            std::to_string(r) + " did not report: " + v.status().message());
    TIDE_ASSIGN_OR_RETURN(auto f, DiskDeltaFile::decode(*v));
    records.push_back(f);
  }
  return commitVersion(options, version, mine.baseVersion, std::move(records));
}

}  // namespace tide::sync
