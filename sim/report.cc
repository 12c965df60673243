#include "sim/report.h"

#include <cstdio>
#include <fstream>
#include <string>

namespace tide::sim {
namespace {

std::string gb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

double appliedSeconds(const Scenario& sc, std::string_view key) {
  return calibrationSeconds(sc.calib, key);
}

}  // namespace

void printStrategyResult(const StrategyResult& r, const Scenario& sc) {
  std::printf("%s / %s: %.3f s  (lower bound %.3f s on %s; %.1f GB per inference rank)\n",
              r.scenario.c_str(), r.strategy.c_str(), r.seconds, r.lowerBoundSeconds,
              r.bottleneck.c_str(), r.bytesPerInferRank / 1e9);
  std::printf("  %-14s %10s %10s %10s %10s %12s\n", "stage", "first_s", "last_s", "busy_s",
              "critical_s", "GB");
  for (const auto& s : r.stages) {
    if (s.tasks == 0) {
      // A wait with no task of its own (a polled lock sitting free).
      if (s.critical > 0) {
        std::printf("  %-14s %10s %10s %10s %10.3f %12s\n", s.name.c_str(), "-", "-", "-",
                    s.critical, "-");
      }
      continue;
    }
    std::printf("  %-14s %10.3f %10.3f %10.3f %10.3f %12.2f\n", s.name.c_str(), s.first, s.last,
                s.busy, s.critical, s.bytes / 1e9);
  }
  std::printf("  spans: prepare %.3f s, transfer %.3f s, finalize %.3f s\n", r.prepareSeconds,
              r.transferSeconds, r.finalizeSeconds);
  if (r.profileChoice != ProfileChoice::kNotRecorded) {
    std::string why = "the default: the strategy names none";
    if (r.profileChoice == ProfileChoice::kStrategy) why = "the strategy's own";
    if (r.profileChoice == ProfileChoice::kScenario) {
      why = "the scenario's [strategy] profile";
      if (!r.profileOwn.empty()) why += "; the strategy's own is " + r.profileOwn;
    }
    std::printf("  priced by profile %s (%s)\n", r.profileName.c_str(), why.c_str());
  }
  for (const auto& p : sc.published) {
    if (p.strategy != r.strategy) continue;
    std::printf("  %s %.3f s, error %+.1f %%\n", p.name().c_str(), p.seconds,
                (r.spanSeconds(p.span) / p.seconds - 1) * 100);
  }
  std::printf(
      "  %llu tasks, %llu flows (%llu solves re-rating %.1f M flows), planned in %.2f s CPU, "
      "simulated in %.2f s wall, %.0f events/s, process peak RSS so far %.0f MB\n",
      static_cast<unsigned long long>(r.tasks), static_cast<unsigned long long>(r.flows),
      static_cast<unsigned long long>(r.solves), r.solvedFlows / 1e6, r.planCpuSeconds,
      r.wallSeconds, r.eventsPerSecond, r.peakRssBytes / 1e6);
}

void printScenarioInputs(const Scenario& sc) {
  const auto& p = sc.strategy;
  auto nodes = [](int n) { return std::to_string(n) + (n == 1 ? " node" : " nodes"); };
  std::string inferWhere = sc.colocated ? std::string("the training ranks' GPUs (colocated)")
                           : sc.sharesTrainNodes()
                               ? "GPUs " + std::to_string(sc.inferBase()) + "-" +
                                     std::to_string(sc.inferBase() + sc.infer.worldSize() - 1) +
                                     " of the training " + (sc.trainNodes == 1 ? "node" : "nodes")
                               : nodes(sc.inferNodes);
  std::printf("scenario  %s: model %s, train %s on %s -> infer %s on %s\n", sc.name.c_str(),
              sc.model.name.c_str(), sc.train.toString().c_str(), nodes(sc.trainNodes).c_str(),
              sc.infer.toString().c_str(), inferWhere.c_str());
  std::printf("cluster   %s\n", sc.cluster.toString().c_str());
  std::string bucket = gb(p.options.bucketBytes);
  for (const auto& [name, bytes] : p.ownBucketBytes)
    if (bytes > 0) bucket += ", " + name + " " + gb(bytes);
  std::printf("strategy  bucket %s, %s on the wire, %s, page %llu B\n", bucket.c_str(),
              p.options.fp8Wire ? "fp8" : "bf16",
              p.options.firstUpdate ? "first update" : "not the first update",
              static_cast<unsigned long long>(p.options.pageBytes));
  std::string overridden;
  for (const auto& c : sc.profile.constants)
    if (appliedSeconds(sc, c.key) != c.seconds) overridden += " " + c.key;
  const std::string sets = overridden.empty() ? "" : ", scenario sets" + overridden;
  if (sc.profileGiven) {
    std::printf("profile   %s (%s) for every strategy, set by the scenario%s\n",
                sc.profile.name.c_str(), sc.profile.stack.c_str(), sets.c_str());
  } else {
    std::printf("profile   each strategy's own (named with its result); %s where it names none%s\n",
                sc.profile.name.c_str(), sets.c_str());
  }
}

nlohmann::json scenarioInputsJson(const Scenario& sc) {
  const auto& c = sc.cluster;
  const auto& p = sc.strategy;
  return {{"name", sc.name},
          {"model", sc.model.name},
          {"train_layout", sc.train.toString()},
          {"train_nodes", sc.trainNodes},
          {"infer_layout", sc.infer.toString()},
          {"infer_nodes", sc.inferNodes},
          {"infer_first_gpu", sc.inferBase()},
          {"cluster",
           {{"name", c.name},
            {"gpus_per_node", c.gpusPerNode},
            {"nics_per_node", c.nicsPerNode},
            {"nic_bytes_per_second", c.nicBps},
            {"nvlink_bytes_per_second", c.nvlinkBps},
            {"pcie_h2d_bytes_per_second", c.pcieH2DBps},
            {"pcie_d2h_bytes_per_second", c.pcieD2HBps},
            {"host_mem_bytes_per_second", c.hostMemBps},
            {"hbm_bytes_per_second", c.hbmBps},
            {"nodes_per_leaf", c.fabric.nodesPerLeaf},
            {"oversubscription", c.fabric.oversubscription},
            {"latency_seconds", c.fabric.latencySeconds}}},
          {"strategy",
           {{"bucket_bytes", p.options.bucketBytes},
            {"strategies", p.names},
            {"own_bucket_bytes", p.ownBucketBytes},
            {"lock_poll_seconds", sc.calib.lockPollSeconds},
            {"wire_dtype", p.options.fp8Wire ? "fp8" : "bf16"},
            {"first_update", p.options.firstUpdate},
            {"pipelined", p.options.pipelined},
            {"page_bytes", p.options.pageBytes},
            {"chunk_bytes", p.options.chunkBytes},
            {"channels", p.options.channels}}},
          // A strategy's own profile prices it unless the scenario names one:
          // each result records the profile that priced it.
          {"profile", sc.profileGiven ? profileJson(sc)
                                      : nlohmann::json{{"name", nullptr},
                                                       {"default", sc.profile.name},
                                                       {"per_strategy", true}}}};
}

nlohmann::json profileJson(const Scenario& sc) {
  nlohmann::json constants = nlohmann::json::array();
  for (const auto& c : sc.profile.constants) {
    const double applied = appliedSeconds(sc, c.key);
    nlohmann::json j = {{"key", c.key},
                        {"seconds", applied},
                        {"label", constantLabelName(c.label)},
                        {"source", c.source}};
    if (!c.command.empty()) j["command"] = c.command;
    if (!c.rows.empty()) j["rows"] = c.rows;
    if (applied != c.seconds) {
      j["label"] = "scenario";
      j["profile_seconds"] = c.seconds;
    }
    constants.push_back(std::move(j));
  }
  return {{"name", sc.profile.name},
          {"stack", sc.profile.stack},
          {"version", sc.profile.version},
          {"constants", constants}};
}

void recordProfile(const Scenario& priced, ProfileChoice choice, std::string own,
                   StrategyResult& r) {
  r.profileName = priced.profile.name;
  r.profileChoice = choice;
  r.profileOwn = std::move(own);
  r.profileConstants.clear();
  for (const auto& c : priced.profile.constants)
    r.profileConstants.emplace_back(c.key, appliedSeconds(priced, c.key));
}

Status writeJsonFile(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  if (!out) return TIDE_ERROR(Code::kInvalidArgument, "cannot write " + path);
  out << j.dump(2) << "\n";
  if (!out) return TIDE_ERROR(Code::kDataLoss, "short write to " + path);
  return Status::ok();
}

}  // namespace tide::sim
