#include "sim/simulator.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim/plan_lowering.h"

namespace tide::sim {

void linkLowerBound(const WorkGraph& g, const FlowSolver& s, double* seconds,
                    std::string* bottleneck) {
  std::vector<double> load(s.linkCount(), 0.0);
  for (const Task& t : g.tasks()) {
    if (!t.isFlow) continue;
    for (LinkId l : g.paths()[t.pathId]) load[l] += t.bytes;
  }
  *seconds = 0;
  bottleneck->clear();
  for (LinkId l = 0; l < load.size(); ++l) {
    if (s.capacity(l) <= 0 || load[l] <= 0) continue;
    double t = load[l] / s.capacity(l);
    if (t > *seconds) {
      *seconds = t;
      *bottleneck = s.linkName(l);
    }
  }
}

Result<StrategyResult> simulateScenario(const Scenario& sc, const plan::TransferPlan& plan,
                                        const Progress& progress) {
  LoweringOptions o;
  o.maxBucketGroups = sc.strategy.options.maxStepBuckets;
  o.maxFlows = kScenarioMaxFlows;
  o.progress = progress;
  TIDE_ASSIGN_OR_RETURN(StrategyResult r, simulatePlan(plan, sc.cluster, sc.calib, o));
  r.scenario = sc.name;
  return r;
}

namespace {

// Span boundaries from the stages: the opening rounds (and a first
// update's registration) come before everything else, and post-processing
// starts the moment the last transfer ends (zero-length tasks when a model
// has nothing to redo).
void splitSpans(StrategyResult& r) {
  double transferStart = r.seconds, transferEnd = r.seconds;
  bool rounds = false, post = false;
  for (const auto& s : r.stages) {
    if (s.tasks == 0) continue;
    if (s.name == plan::kStageRounds) {
      rounds = true;
    } else if (s.name == plan::kStageRegister) {
      continue;  // the framework registers while it prepares the engines
    } else if (s.name == plan::kStagePostprocess) {
      post = true;
      transferEnd = s.first;
    } else {
      transferStart = std::min(transferStart, s.first);
    }
  }
  r.prepareSeconds = r.finalizeSeconds = 0;
  r.transferSeconds = r.seconds;
  if (!rounds || !post || transferStart > transferEnd) return;  // not a scenario graph
  r.prepareSeconds = transferStart;
  r.transferSeconds = transferEnd - transferStart;
  r.finalizeSeconds = r.seconds - transferEnd;
}

}  // namespace

void takeExecution(StrategyResult& r, ExecResult&& ex, const WorkGraph& g) {
  r.seconds = ex.makespan;
  r.stages = std::move(ex.stages);
  r.tasks = ex.tasksRun;
  r.flows = ex.flows;
  r.solves = ex.solves;
  r.solvedFlows = ex.solvedFlows;
  r.wallSeconds = ex.wallSeconds;
  r.eventsPerSecond = ex.eventsPerSecond();
  r.events = std::move(ex.events);
  r.stageNames = g.stageNames();
  splitSpans(r);
}

const char* profileChoiceName(ProfileChoice c) {
  switch (c) {
    case ProfileChoice::kScenario:
      return "scenario";
    case ProfileChoice::kStrategy:
      return "strategy";
    case ProfileChoice::kDefault:
      return "default";
    case ProfileChoice::kNotRecorded:
      break;
  }
  return "not recorded";
}

nlohmann::json StrategyResult::toJson() const {
  nlohmann::json j;
  j["schema"] = "tide.sim/1";
  j["scenario"] = scenario;
  j["strategy"] = strategy;
  j["seconds"] = seconds;
  j["lower_bound_seconds"] = lowerBoundSeconds;
  j["ratio_to_lower_bound"] = lowerBoundSeconds > 0 ? seconds / lowerBoundSeconds : 0;
  j["bottleneck"] = bottleneck;
  j["wire_bytes"] = wireBytes;
  j["bytes_per_inference_rank"] = bytesPerInferRank;
  j["buckets_per_stage"] = bucketsPerStage;
  j["merge_factor"] = mergeFactor;
  j["registration_seconds"] = registrationSeconds;
  j["spans"] = {{"prepare_seconds", prepareSeconds},
                {"transfer_seconds", transferSeconds},
                {"finalize_seconds", finalizeSeconds}};
  nlohmann::json st = nlohmann::json::array();
  for (const auto& s : stages) {
    st.push_back({{"name", s.name},
                  {"first_seconds", s.first},
                  {"last_seconds", s.last},
                  {"busy_seconds", s.busy},
                  {"critical_seconds", s.critical},
                  {"bytes", s.bytes},
                  {"tasks", s.tasks}});
  }
  j["stages"] = st;
  j["tasks"] = tasks;
  j["flows"] = flows;
  j["solves"] = solves;
  j["solved_flows"] = solvedFlows;
  j["events"] = events.size();
  j["wall_seconds"] = wallSeconds;
  j["events_per_second"] = eventsPerSecond;
  j["plan_cpu_seconds"] = planCpuSeconds;
  j["peak_rss_bytes"] = peakRssBytes;
  if (profileChoice != ProfileChoice::kNotRecorded) {
    nlohmann::json c = nlohmann::json::object();
    for (const auto& [key, secs] : profileConstants) c[key + "_seconds"] = secs;
    j["profile"] = {
        {"name", profileName}, {"chosen_by", profileChoiceName(profileChoice)}, {"constants", c}};
    if (!profileOwn.empty()) j["profile"]["own"] = profileOwn;
  }
  return j;
}

}  // namespace tide::sim
