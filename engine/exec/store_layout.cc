#include "engine/exec/store_layout.h"

#include <algorithm>
#include <sstream>

namespace tide::exec {

using plan::Space;

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

Result<StoreLayout> StoreLayout::build(const plan::TransferPlan& plan,
                                       const std::vector<RankLayout>& layouts, uint32_t nodes,
                                       uint32_t replicas, uint64_t fragmentBytes,
                                       uint64_t segmentBytes) {
  const auto world = static_cast<uint32_t>(plan.ranks.size());
  StoreLayout l;
  l.nodes = nodes == 0 ? world : nodes;
  l.replicas = replicas;
  l.fragmentBytes = fragmentBytes;
  if (l.nodes > world) {
    return TIDE_ERROR(Code::kInvalidArgument, "store: " + std::to_string(l.nodes) +
                                                  " nodes but only " + std::to_string(world) +
                                                  " ranks to host them");
  }
  if (replicas == 0 || replicas > l.nodes) {
    return TIDE_ERROR(Code::kInvalidArgument, "store: " + std::to_string(replicas) +
                                                  " replicas need as many distinct nodes (have " +
                                                  std::to_string(l.nodes) + ")");
  }
  if (fragmentBytes < 64) {
    return TIDE_ERROR(Code::kInvalidArgument, "store: fragments must be at least 64 bytes");
  }
  l.writerOf.assign(world, -1);
  l.fragBase.push_back(0);
  uint64_t total = 0;
  for (uint32_t r = 0; r < world; ++r) {
    if (plan.ranks[r].role != plan::Role::kTrainer) {
      l.readerRanks.push_back(static_cast<int>(r));
      continue;
    }
    const Space s = layouts[r].spaceBytes(Space::kStaging) > 0 ? Space::kStaging : Space::kTrain;
    const uint64_t bytes = layouts[r].spaceBytes(s);
    l.writerOf[r] = static_cast<int>(l.writerRank.size());
    l.writerRank.push_back(static_cast<int>(r));
    l.sliceSpace.push_back(s);
    l.sliceBytes.push_back(bytes);
    l.fragBase.push_back(l.fragBase.back() +
                         static_cast<uint32_t>((bytes + fragmentBytes - 1) / fragmentBytes));
    total += bytes;
  }
  if (segmentBytes == 0) {
    // Least-loaded placement keeps every node within one fragment of the
    // average; a lost node's share moves to the survivors.
    const uint32_t survivors = l.nodes > replicas ? l.nodes - 1 : l.nodes;
    const uint64_t perVersion = (total * replicas + survivors - 1) / survivors + fragmentBytes +
                                64 * (l.fragBase.back() + 1);
    segmentBytes = 3 * perVersion;
  }
  l.segmentBytes = (segmentBytes + 63) / 64 * 64;
  return l;
}

uint32_t StoreLayout::writerOfFragment(uint32_t f) const {
  auto it = std::upper_bound(fragBase.begin(), fragBase.end(), f);
  return static_cast<uint32_t>(it - fragBase.begin() - 1);
}

uint64_t StoreLayout::sliceOffset(uint32_t f) const {
  return static_cast<uint64_t>(f - fragBase[writerOfFragment(f)]) * fragmentBytes;
}

uint64_t StoreLayout::bytesOf(uint32_t f) const {
  const uint64_t off = sliceOffset(f);
  return std::min(fragmentBytes, sliceBytes[writerOfFragment(f)] - off);
}

std::string placeKey(uint64_t version, uint32_t attempt) {
  return storeKey(version, "place/a" + std::to_string(attempt));
}

std::string joinKey() {
  return "store/join";
}

std::string storeKey(uint64_t version, const std::string& what) {
  return "store/v" + std::to_string(version) + "/" + what;
}

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

}  // namespace tide::exec
