// `tide store list|inspect`: the weight store's snapshot catalog. The store
// lives inside a `tide sync --strategy store` run (its nodes are segments of
// the run's ranks) and goes away with it; the run leaves its catalog in the
// file named by --store-catalog, which these commands read and check.

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/core/units.h"
#include "engine/sync/store/catalog_json.h"
#include "harness/command.h"

namespace tide::harness {

namespace {

struct StoreArgs {
  std::string catalog;
  uint64_t version = 0;
  bool fragments = false;
};

nlohmann::json load(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw StatusError(TIDE_ERROR(Code::kNotFound, "cannot open catalog " + path));
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("schema", "") != "tide.store/1" ||
      !j.contains("snapshots") || !j["snapshots"].is_array()) {
    throw StatusError(
        TIDE_ERROR(Code::kInvalidArgument, path + " is not a store catalog (tide.store/1)"));
  }
  return j;
}

std::string liveNodes(const nlohmann::json& j) {
  std::string lost;
  size_t live = 0, n = 0;
  for (const auto& l : j.value("live", nlohmann::json::array())) {
    if (l.is_boolean() && l.get<bool>()) {
      ++live;
    } else {
      lost += (lost.empty() ? "" : ",") + std::to_string(n);
    }
    ++n;
  }
  return std::to_string(n) + " nodes, " + std::to_string(live) + " live" +
         (lost.empty() ? "" : " (lost: " + lost + ")");
}

void runList(const StoreArgs& a) {
  const nlohmann::json j = load(a.catalog);
  std::printf("store     %s, %d replicas, segment %s per node\n", liveNodes(j).c_str(),
              j.value("replicas", 0), formatBytes(j.value("segment_bytes", uint64_t{0})).c_str());
  std::printf("%-8s %-10s %-7s %-10s %-12s %s\n", "version", "state", "leases", "fragments",
              "bytes", "manifest");
  for (const auto& s : j["snapshots"]) {
    const Status ok = sync::store::checkSnapshotJson(s);
    std::printf("%-8llu %-10s %-7u %-10zu %-12llu %s\n",
                static_cast<unsigned long long>(s.value("version", uint64_t{0})),
                s.value("state", "?").c_str(), s.value("leases", 0u),
                s.value("fragments", nlohmann::json::array()).size(),
                static_cast<unsigned long long>(s.value("bytes", uint64_t{0})),
                ok.isOk() ? "checked" : ok.toString().c_str());
  }
  for (const auto& e : j.value("events", nlohmann::json::array())) {
    if (e.is_string()) std::printf("event     %s\n", e.get<std::string>().c_str());
  }
}

void runInspect(const StoreArgs& a) {
  const nlohmann::json j = load(a.catalog);
  for (const auto& s : j["snapshots"]) {
    if (s.value("version", uint64_t{0}) != a.version) continue;
    orThrow(sync::store::checkSnapshotJson(s));
    std::printf("version   %llu  %s  leases %u  manifest xxh3 %016llx (checked)\n",
                static_cast<unsigned long long>(a.version), s.value("state", "?").c_str(),
                s.value("leases", 0u),
                static_cast<unsigned long long>(s.value("manifest_hash", uint64_t{0})));
    size_t i = 0, underReplicated = 0;
    for (const auto& f : s["fragments"]) {
      std::string reps;
      size_t good = 0;
      for (const auto& r : f["replicas"]) {
        const bool usable = r.value("stored", false) && r.value("live", false);
        good += usable ? 1 : 0;
        reps += " " + std::to_string(r.value("node", 0)) + "@" +
                std::to_string(r.value("offset", uint64_t{0})) + (usable ? "" : "(gone)");
      }
      if (good < static_cast<size_t>(j.value("replicas", 0))) ++underReplicated;
      if (a.fragments) {
        std::printf("fragment  %-5zu %10llu bytes  xxh3 %016llx  on%s\n", i,
                    static_cast<unsigned long long>(f.value("bytes", uint64_t{0})),
                    static_cast<unsigned long long>(f.value("hash", uint64_t{0})), reps.c_str());
      }
      ++i;
    }
    std::printf("fragments %zu, %zu below %d live replicas; %llu bytes\n", i, underReplicated,
                j.value("replicas", 0),
                static_cast<unsigned long long>(s.value("bytes", uint64_t{0})));
    return;
  }
  throw StatusError(TIDE_ERROR(
      Code::kNotFound, "no snapshot of version " + std::to_string(a.version) + " in " + a.catalog));
}

}  // namespace

void addStoreCommand(CLI::App& app) {
  auto a = std::make_shared<StoreArgs>();
  auto* cmd = app.add_subcommand(
      "store", "List and inspect the weight store's snapshots (the catalog a store run leaves)");
  cmd->require_subcommand(1);
  auto* list = cmd->add_subcommand("list", "snapshots, states, leases, node liveness, events");
  list->add_option("catalog", a->catalog, "catalog file (tide sync --store-catalog)")->required();
  list->callback([a] { runList(*a); });
  auto* inspect = cmd->add_subcommand("inspect", "one snapshot: manifest check, replicas");
  inspect->add_option("catalog", a->catalog, "catalog file (tide sync --store-catalog)")
      ->required();
  inspect->add_option("--version", a->version, "snapshot version")->required();
  inspect->add_flag("--fragments", a->fragments, "list every fragment and its replicas");
  inspect->callback([a] { runInspect(*a); });
}

}  // namespace tide::harness
