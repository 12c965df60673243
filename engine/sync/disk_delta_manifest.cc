#include "engine/sync/disk_delta_manifest.h"

#include <xxhash.h>

#include <cinttypes>
#include <cstdio>
#include <sstream>

namespace tide::sync {

namespace {
constexpr const char* kMagic = "tide-disk-delta 1";
}

std::string DiskDeltaFile::encode() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "file %u %s %" PRIu64 " %016" PRIx64 " %016" PRIx64, rank,
                kind == DiskDeltaKind::kBase ? "base" : "delta", bytes, fileHash, versionHash);
  return buf;
}

Result<DiskDeltaFile> DiskDeltaFile::decode(const std::string& line) {
  DiskDeltaFile f;
  char kind[8] = {0};
  unsigned rank = 0;
  if (std::sscanf(line.c_str(), "file %u %7s %" SCNu64 " %" SCNx64 " %" SCNx64, &rank, kind,
                  &f.bytes, &f.fileHash, &f.versionHash) != 5)
    return TIDE_ERROR(Code::kDataLoss, "bad disk-delta file record: '" + line + "'");
  f.rank = rank;
  std::string k = kind;
  if (k == "base")
    f.kind = DiskDeltaKind::kBase;
  else if (k == "delta")
    f.kind = DiskDeltaKind::kDelta;
  else
    return TIDE_ERROR(Code::kDataLoss, "bad disk-delta file kind: '" + line + "'");
  return f;
}

std::string DiskDeltaManifest::serialize() const {
  std::ostringstream os;
  os << kMagic << "\n"
     << "version " << version << "\n"
     << "base " << baseVersion << "\n"
     << "ranks " << ranks << "\n";
  for (const auto& f : files) os << f.encode() << "\n";
  std::string body = os.str();
  char sum[40];
  std::snprintf(sum, sizeof sum, "sum %016" PRIx64 "\n",
                static_cast<uint64_t>(XXH3_64bits(body.data(), body.size())));
  return body + sum;
}

Result<DiskDeltaManifest> DiskDeltaManifest::parse(const std::string& text) {
  auto bad = [](const std::string& why) {
    return TIDE_ERROR(Code::kDataLoss, "bad disk-delta manifest: " + why);
  };
  auto sumAt = text.rfind("sum ");
  if (sumAt == std::string::npos || (sumAt > 0 && text[sumAt - 1] != '\n'))
    return bad("no checksum line (truncated?)");
  uint64_t want = 0;
  if (std::sscanf(text.c_str() + sumAt, "sum %" SCNx64, &want) != 1) return bad("checksum line");
  if (XXH3_64bits(text.data(), sumAt) != want) return bad("checksum mismatch");
  std::istringstream is(text.substr(0, sumAt));
  std::string line;
  if (!std::getline(is, line) || line != kMagic) return bad("wrong magic");
  DiskDeltaManifest m;
  std::string key;
  if (!(is >> key >> m.version) || key != "version") return bad("version");
  if (!(is >> key >> m.baseVersion) || key != "base") return bad("base");
  if (!(is >> key >> m.ranks) || key != "ranks") return bad("ranks");
  std::getline(is, line);
  while (std::getline(is, line)) {
    if (line.empty()) continue;
    TIDE_ASSIGN_OR_RETURN(auto f, DiskDeltaFile::decode(line));
    if (f.rank != m.files.size()) return bad("records out of rank order");
    m.files.push_back(f);
  }
  if (m.files.size() != m.ranks) return bad("record count differs from ranks");
  if (m.baseVersion > m.version) return bad("base after version");
  for (const auto& f : m.files)
    if ((f.kind == DiskDeltaKind::kBase) != m.isBase()) return bad("file kind differs from base");
  return m;
}

const DiskDeltaFile* DiskDeltaManifest::file(uint32_t rank) const {
  return rank < files.size() ? &files[rank] : nullptr;
}

std::string rankFileName(uint64_t version, uint32_t rank, DiskDeltaKind kind) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "v%010" PRIu64 ".r%05u.%s", version, rank,
                kind == DiskDeltaKind::kBase ? "base" : "delta");
  return buf;
}

std::string manifestName(uint64_t version) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "v%010" PRIu64 ".manifest", version);
  return buf;
}

std::optional<uint64_t> manifestVersion(const std::string& fileName) {
  uint64_t v = 0;
  int used = 0;
  if (fileName.size() != 20 || fileName[0] != 'v') return std::nullopt;
  if (std::sscanf(fileName.c_str(), "v%10" SCNu64 ".manifest%n", &v, &used) != 1 || used != 20)
    return std::nullopt;
  return v;
}

}  // namespace tide::sync
