#include "engine/sync/store/catalog_json.h"

#include <xxhash.h>

#include <sstream>

namespace tide::sync::store {

nlohmann::json catalogToJson(const SnapshotCatalog& catalog) {
  nlohmann::json j;
  j["schema"] = "tide.store/1";
  j["nodes"] = catalog.nodes();
  j["replicas"] = catalog.replicas();
  nlohmann::json live = nlohmann::json::array();
  for (uint32_t n = 0; n < catalog.nodes(); ++n) live.push_back(catalog.live(n));
  j["live"] = live;
  nlohmann::json snaps = nlohmann::json::array();
  for (const auto& [v, s] : catalog.snapshots()) {
    nlohmann::json e;
    e["version"] = v;
    e["state"] = snapshotStateName(s.state);
    e["leases"] = s.leases;
    e["manifest_hash"] = s.manifestHash;
    e["manifest"] = s.manifest;
    uint64_t bytes = 0;
    nlohmann::json frags = nlohmann::json::array();
    for (const Fragment& f : s.fragments) {
      bytes += f.bytes;
      nlohmann::json reps = nlohmann::json::array();
      for (size_t i = 0; i < f.nodes.size(); ++i) {
        reps.push_back({{"node", f.nodes[i]},
                        {"offset", f.offsets[i]},
                        {"stored", f.stored.count(f.nodes[i]) > 0},
                        {"live", catalog.live(f.nodes[i])}});
      }
      frags.push_back({{"bytes", f.bytes}, {"hash", f.hash}, {"replicas", reps}});
    }
    e["bytes"] = bytes;
    e["fragments"] = frags;
    snaps.push_back(e);
  }
  j["snapshots"] = snaps;
  return j;
}

Status checkSnapshotJson(const nlohmann::json& s) {
  try {
    const uint64_t version = s.at("version").get<uint64_t>();
    const std::string manifest = s.at("manifest").get<std::string>();
    const std::string where = "store: version " + std::to_string(version);
    if (manifest.empty()) return TIDE_ERROR(Code::kFailedPrecondition, where + " is not committed");
    if (XXH3_64bits(manifest.data(), manifest.size()) != s.at("manifest_hash").get<uint64_t>()) {
      return TIDE_ERROR(Code::kDataLoss, where + ": the manifest does not match its hash");
    }
    // Each manifest line "i bytes hash" must be the entry's fragment i.
    std::istringstream in(manifest);
    std::string line;
    const auto& frags = s.at("fragments");
    size_t seen = 0;
    for (int skip = 0; skip < 3 && std::getline(in, line); ++skip) {
    }
    while (std::getline(in, line)) {
      std::istringstream l(line);
      size_t i = 0;
      uint64_t bytes = 0, hash = 0;
      if (!(l >> i >> bytes >> hash) || i != seen || i >= frags.size() ||
          frags[i].at("bytes").get<uint64_t>() != bytes ||
          frags[i].at("hash").get<uint64_t>() != hash) {
        return TIDE_ERROR(Code::kDataLoss, where + ": manifest line '" + line +
                                               "' does not match fragment " + std::to_string(seen));
      }
      ++seen;
    }
    if (seen != frags.size()) {
      return TIDE_ERROR(Code::kDataLoss, where + ": the manifest lists " + std::to_string(seen) +
                                             " of " + std::to_string(frags.size()) + " fragments");
    }
  } catch (const nlohmann::json::exception& e) {
    return TIDE_ERROR(Code::kInvalidArgument, std::string("store: bad catalog entry: ") + e.what());
  }
  return Status::ok();
}

}  // namespace tide::sync::store
