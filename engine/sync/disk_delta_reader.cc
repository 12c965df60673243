#include "engine/sync/disk_delta_reader.h"

#include <dirent.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/sync/delta/delta_frame.h"

namespace tide::sync {

namespace {

Result<std::vector<std::string>> listDir(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return TIDE_ERRNO("open directory " + dir);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d.get())) names.emplace_back(e->d_name);
  return names;
}

std::vector<std::span<const uint8_t>> constViews(std::span<const std::span<uint8_t>> t) {
  return {t.begin(), t.end()};
}

}  // namespace

DiskDeltaReader::DiskDeltaReader(DiskDeltaOptions options, uint32_t rank, DiskDeltaSlice slice)
    : options_(std::move(options)), rank_(rank), slice_(std::move(slice)) {}

Result<DiskDeltaManifest> DiskDeltaReader::manifest(uint64_t version) const {
  FileIoOptions io;
  io.useUring = false;
  TIDE_ASSIGN_OR_RETURN(auto bytes, readWholeFile(options_.dir + "/" + manifestName(version), io));
  TIDE_ASSIGN_OR_RETURN(auto m, DiskDeltaManifest::parse(std::string(bytes.begin(), bytes.end())));
  if (m.version != version)
    return TIDE_ERROR(Code::kDataLoss, "manifest " + manifestName(version) + " names version " +
                                           std::to_string(m.version));
  return m;
}

Result<uint64_t> DiskDeltaReader::latest() const {
  TIDE_ASSIGN_OR_RETURN(auto names, listDir(options_.dir));
  std::vector<uint64_t> versions;
  for (const auto& n : names)
    if (auto v = manifestVersion(n)) versions.push_back(*v);
  std::sort(versions.rbegin(), versions.rend());
  // A manifest that does not check (hand-edited, disk error) does not count;
  // rename makes a torn one impossible otherwise.
  for (auto v : versions)
    if (manifest(v).isOk()) return v;
  return TIDE_ERROR(Code::kNotFound, "no committed version in " + options_.dir);
}

Status DiskDeltaReader::checkTargets(std::span<const std::span<uint8_t>> targets) const {
  TIDE_RETURN_IF_ERROR(slice_.validate());
  if (targets.size() != slice_.tensorBytes.size())
    return TIDE_ERROR(Code::kInvalidArgument, "disk-delta reader: wrong tensor count");
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i].size() != slice_.tensorBytes[i])
      return TIDE_ERROR(Code::kInvalidArgument,
                        "disk-delta reader: wrong size of tensor " + std::to_string(i));
  return Status::ok();
}

Result<std::vector<uint8_t>> DiskDeltaReader::readChecked(const DiskDeltaManifest& m) const {
  const DiskDeltaFile* f = m.file(rank_);
  if (!f)
    return TIDE_ERROR(Code::kInvalidArgument, "version " + std::to_string(m.version) +
                                                  " has no file for rank " + std::to_string(rank_));
  std::string path = options_.dir + "/" + rankFileName(m.version, rank_, f->kind);
  TIDE_ASSIGN_OR_RETURN(auto bytes, readWholeFile(path, options_.io));
  if (bytes.size() != f->bytes)
    return TIDE_ERROR(Code::kDataLoss, path + ": " + std::to_string(bytes.size()) +
                                           " bytes, manifest says " + std::to_string(f->bytes) +
                                           " (truncated?)");
  if (XXH3_64bits(bytes.data(), bytes.size()) != f->fileHash)
    return TIDE_ERROR(Code::kDataLoss, path + ": checksum differs from the manifest (corrupt)");
  return bytes;
}

Status DiskDeltaReader::step(std::span<const std::span<uint8_t>> targets,
                             const DiskDeltaManifest& m, std::optional<uint64_t>& current) {
  TIDE_ASSIGN_OR_RETURN(auto bytes, readChecked(m));
  stats_.filesRead++;
  stats_.bytesRead += bytes.size();
  if (m.isBase()) {
    if (bytes.size() != slice_.totalBytes())
      return TIDE_ERROR(Code::kDataLoss, "base of version " + std::to_string(m.version) +
                                             " does not match this slice's size");
    size_t off = 0;
    for (auto t : targets) {
      std::memcpy(t.data(), bytes.data() + off, t.size());
      off += t.size();
    }
    stats_.basesLoaded++;
  } else {
    if (!current || *current + 1 != m.version)
      return TIDE_ERROR(Code::kFailedPrecondition,
                        "delta " + std::to_string(m.version) + " does not follow the held version");
    // applyFrame validates the whole frame before writing any target.
    TIDE_RETURN_IF_ERROR(
        applyFrame(bytes, targets, slice_.effectiveItems(), m.version - 1, m.version));
    stats_.deltasApplied++;
  }
  auto views = constViews(targets);
  if (sliceHash(views) != m.file(rank_)->versionHash) {
    current.reset();  // whatever the targets hold now is not a version we know
    return TIDE_ERROR(Code::kDataLoss, "slice hash after version " + std::to_string(m.version) +
                                           " differs from the manifest");
  }
  current = m.version;
  return Status::ok();
}

Status DiskDeltaReader::update(std::span<const std::span<uint8_t>> targets,
                               std::optional<uint64_t>& current, uint64_t to) {
  TIDE_RETURN_IF_ERROR(checkTargets(targets));
  Stopwatch sw;
  TIDE_ASSIGN_OR_RETURN(auto target, manifest(to));
  if (current && *current == to) return Status::ok();

  // Plan: the chain from what we hold, if every manifest on it is present;
  // else from the target's base.
  std::vector<DiskDeltaManifest> chain;
  bool fromCurrent = current && *current < to;
  if (fromCurrent) {
    for (uint64_t v = *current + 1; v < to; ++v) {
      auto m = manifest(v);
      if (!m.isOk()) {
        fromCurrent = false;
        break;
      }
      chain.push_back(std::move(*m));
    }
  }
  if (!fromCurrent) {
    chain.clear();
    for (uint64_t v = target.baseVersion; v < to; ++v) {
      TIDE_ASSIGN_OR_RETURN(auto m, manifest(v));
      chain.push_back(std::move(m));
    }
  }
  chain.push_back(std::move(target));
  // A base inside the chain restarts it; skip what precedes the last one.
  size_t start = 0;
  for (size_t i = 0; i < chain.size(); ++i)
    if (chain[i].isBase()) start = i;
  for (size_t i = start; i < chain.size(); ++i)
    TIDE_RETURN_IF_ERROR(step(targets, chain[i], current));
  stats_.seconds += sw.seconds();
  return Status::ok();
}

Result<uint64_t> pruneBefore(const DiskDeltaOptions& options, uint64_t keepFrom) {
  DiskDeltaReader reader(options, 0, {});
  uint64_t base = 0;
  bool found = false;
  for (uint64_t v = keepFrom + 1; v-- > 0;) {
    auto m = reader.manifest(v);
    if (m.isOk() && m->isBase()) {
      base = v;
      found = true;
      break;
    }
  }
  if (!found || base == 0) return uint64_t{0};
  TIDE_ASSIGN_OR_RETURN(auto names, listDir(options.dir));
  uint64_t removed = 0;
  // Manifests first, so no reader sees a version whose files are going.
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& n : names) {
      uint64_t v = 0;
      if (n.size() < 12 || n[0] != 'v' || std::sscanf(n.c_str() + 1, "%10lu", &v) != 1) continue;
      bool isManifest = manifestVersion(n).has_value();
      if (v >= base || isManifest != (pass == 0)) continue;
      if (::unlink((options.dir + "/" + n).c_str()) == 0) removed++;
    }
  TIDE_RETURN_IF_ERROR(syncDirectory(options.dir));
  return removed;
}

}  // namespace tide::sync
