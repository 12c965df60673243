#include "engine/exec/weight_store/store_records.h"

#include <sstream>

namespace tide::exec {

namespace {

Status bad(const std::string& what) {
  return TIDE_ERROR(Code::kDataLoss, "store: bad " + what + " record");
}

void encodeGroups(std::ostream& o, const std::map<std::pair<int, uint32_t>, uint64_t>& groups) {
  o << "G " << groups.size() << '\n';
  for (const auto& [k, h] : groups) o << k.first << ' ' << k.second << ' ' << h << '\n';
}

bool decodeGroups(std::istream& in, std::map<std::pair<int, uint32_t>, uint64_t>& groups) {
  std::string tag;
  size_t n = 0;
  if (!(in >> tag >> n) || tag != "G") return false;
  for (size_t i = 0; i < n; ++i) {
    int peer = 0;
    uint32_t unit = 0;
    uint64_t h = 0;
    if (!(in >> peer >> unit >> h)) return false;
    groups[{peer, unit}] = h;
  }
  return true;
}

}  // namespace

std::string encodePlacement(const Placement& p) {
  std::ostringstream o;
  o << "P " << p.replicas.size() << '\n';
  for (const auto& reps : p.replicas) {
    o << reps.size();
    for (const auto& [n, off] : reps) o << ' ' << n << ' ' << off;
    o << '\n';
  }
  return o.str();
}

namespace {
bool decodePlacementFrom(std::istream& in, uint32_t fragments, Placement& p) {
  std::string tag;
  size_t n = 0;
  if (!(in >> tag >> n) || tag != "P" || n != fragments) return false;
  p.replicas.resize(n);
  for (auto& reps : p.replicas) {
    size_t k = 0;
    if (!(in >> k) || k == 0 || k > 64) return false;
    reps.resize(k);
    for (auto& [node, off] : reps) {
      if (!(in >> node >> off)) return false;
    }
  }
  return true;
}
}  // namespace

Result<Placement> decodePlacement(const std::string& text, uint32_t fragments) {
  std::istringstream in(text);
  Placement p;
  if (!decodePlacementFrom(in, fragments, p)) return bad("placement");
  return p;
}

std::string encodeHashes(const WriterHashes& h) {
  std::ostringstream o;
  o << "F " << h.fragments.size();
  for (uint64_t x : h.fragments) o << ' ' << x;
  o << '\n';
  encodeGroups(o, h.groups);
  return o.str();
}

Result<WriterHashes> decodeHashes(const std::string& text) {
  std::istringstream in(text);
  WriterHashes h;
  std::string tag;
  size_t n = 0;
  // Each hash takes at least two characters: a count beyond that is garbage.
  if (!(in >> tag >> n) || tag != "F" || n > text.size() / 2) return bad("hash");
  h.fragments.resize(n);
  for (auto& x : h.fragments) {
    if (!(in >> x)) return bad("hash");
  }
  if (!decodeGroups(in, h.groups)) return bad("hash");
  return h;
}

std::string encodeCommit(const CommitRecord& c) {
  std::ostringstream o;
  o << "M " << c.manifestHash << ' ' << c.manifest.size() << '\n' << c.manifest;
  o << encodePlacement(c.placement);
  encodeGroups(o, c.groups);
  return o.str();
}

Result<CommitRecord> decodeCommit(const std::string& text, uint32_t fragments) {
  std::istringstream in(text);
  CommitRecord c;
  std::string tag;
  size_t len = 0;
  if (!(in >> tag >> c.manifestHash >> len) || tag != "M" || in.get() != '\n') {
    return bad("commit");
  }
  if (len > text.size()) return bad("commit");
  c.manifest.resize(len);
  if (!in.read(c.manifest.data(), static_cast<std::streamsize>(len))) return bad("commit");
  if (!decodePlacementFrom(in, fragments, c.placement) || !decodeGroups(in, c.groups)) {
    return bad("commit");
  }
  return c;
}

namespace {
// "N n1 .. nN" after a "lost" tag.
// A node at or above `nodes` is refused (0: any node).
bool decodeNodes(std::istream& in, uint32_t nodes, std::vector<uint32_t>& out) {
  size_t n = 0;
  if (!(in >> n)) return false;
  for (size_t i = 0; i < n; ++i) {
    uint32_t node = 0;
    if (!(in >> node) || (nodes > 0 && node >= nodes)) return false;
    out.push_back(node);
  }
  return true;
}
}  // namespace

Result<StoredReport> decodeStoredReport(const std::string& text, uint32_t nodes) {
  StoredReport r;
  std::istringstream in(text);
  std::string tag;
  in >> tag;
  if (tag == "ok") {
    r.ok = true;
    return r;
  }
  if (tag == "error") {
    const size_t at = text.find("error") + 6;  // the reason after "error "
    r.error = at < text.size() ? text.substr(at) : std::string("(no reason given)");
    return r;
  }
  if (tag != "lost" || !decodeNodes(in, nodes, r.lost)) return bad("stored");
  return r;
}

Result<std::vector<uint32_t>> decodeReadReport(const std::string& text) {
  std::istringstream in(text);
  std::string tag;
  std::vector<uint32_t> lost;
  if (!(in >> tag) || tag != "lost" || !decodeNodes(in, 0, lost)) return bad("read");
  return lost;
}

}  // namespace tide::exec
