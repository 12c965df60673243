#include "engine/exec/weight_store/store_layout.h"

#include <algorithm>

namespace tide::exec {

using plan::Space;

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

}  // namespace tide::exec
