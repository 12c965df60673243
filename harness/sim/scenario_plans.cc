#include "harness/sim/scenario_plans.h"

#include "engine/core/process_usage.h"
#include "engine/plan/reshard.h"
#include "workloads/model.h"

namespace tide::harness {

namespace {

Result<const sync::StrategyDescriptor*> simulatedStrategy(std::string_view name) {
  TIDE_ASSIGN_OR_RETURN(const sync::StrategyDescriptor* d, sync::findStrategy(name));
  if (!d->simulated()) {
    return TIDE_ERROR(
        Code::kInvalidArgument,
        "strategy '" + std::string(name) + "' delivers another strategy's plan by " +
            sync::deliveryName(d->delivery) +
            ", which the simulator does not model; simulate its planner instead (" + "simulated: " +
            sync::strategyNames([](const sync::StrategyDescriptor& s) { return s.simulated(); }) +
            ")");
  }
  return d;
}

}  // namespace

Status checkScenarioStrategies(const sim::Scenario& sc) {
  for (const auto& n : sc.strategy.names) {
    auto d = simulatedStrategy(n);
    if (!d.isOk()) return d.status().withContext("[strategy] names");
  }
  for (const auto& [n, bytes] : sc.strategy.ownBucketBytes) {
    (void)bytes;
    auto d = sync::findStrategy(n);
    if (!d.isOk()) return d.status().withContext("[strategy." + n + "]");
  }
  for (const auto& p : sc.published) {
    auto d = sync::findStrategy(p.strategy);
    if (!d.isOk()) return d.status().withContext("[published." + p.strategy + "]");
  }
  return Status::ok();
}

Result<sim::Scenario> loadCheckedScenario(const std::string& path) {
  TIDE_ASSIGN_OR_RETURN(sim::Scenario sc, sim::loadScenario(path));
  if (auto st = checkScenarioStrategies(sc); !st.isOk()) return st.withContext(path);
  return sc;
}

Result<plan::TransferPlan> scenarioPlan(const sim::Scenario& sc,
                                        const sync::StrategyDescriptor& d) {
  const auto& sp = sc.strategy;
  plan::Placement place;
  place.gpusPerNode = sc.cluster.gpusPerNode;
  place.inferFirstGpu = sc.inferBase();
  place.colocated = sc.colocated;
  sync::StrategyOptions o;
  o.bucketBytes = sp.bucketFor(d.name);
  o.channels = sp.channels;
  o.chunkBytes = sp.chunkBytes;
  o.fp8Wire = sp.fp8Wire;
  o.firstUpdate = sp.firstUpdate;
  o.pageBytes = sp.pageBytes;
  o.pipelined = sp.pipelined;
  o.maxStepBuckets = sp.maxSimBuckets;
  if (sc.colocated && d.input != sync::PlanInput::kBoxes) {
    // A step's send between two ranks of one GPU would take no link in the
    // step lowering (sim/step_lowering.h): only moves are lowered onto the
    // device, so only strategies planned from boxes run colocated.
    return TIDE_ERROR(Code::kInvalidArgument,
                      "strategy '" + std::string(d.name) +
                          "' models engines on GPUs of their own; colocated scenarios "
                          "([infer] colocated = true) run the strategies planned from boxes");
  }
  plan::TransferPlan base;
  plan::Reshard reshard;
  if (d.input == sync::PlanInput::kBoxes) {
    workloads::ModelInventory inv = workloads::buildInventory(sc.model);
    TIDE_ASSIGN_OR_RETURN(base, plan::basePlan(inv, sc.train, sc.infer, place));
    TIDE_ASSIGN_OR_RETURN(reshard, plan::planReshard(base));
  } else {
    TIDE_ASSIGN_OR_RETURN(base.ranks,
                          plan::placeRanks(sc.train.worldSize(), sc.infer.worldSize(), place));
  }
  sync::SyncProblem pr{&base, &reshard, &sc.cluster, &sc.train, &sc.infer, o, &sc.model, &base};
  TIDE_ASSIGN_OR_RETURN(auto builder, d.planBuilder());
  return builder->makePlan(pr);
}

Result<sim::Calibration> planCosts(const plan::TransferPlan& p) {
  if (p.work.empty()) return sim::Calibration{};
  TIDE_ASSIGN_OR_RETURN(const sync::StrategyDescriptor* d, sync::findStrategy(p.strategy));
  if (d->profile.empty())
    return TIDE_ERROR(Code::kInvalidArgument, "plan of '" + p.strategy +
                                                  "' has priced steps but its strategy names "
                                                  "no cost profile");
  TIDE_ASSIGN_OR_RETURN(sim::CostProfile profile, sim::loadProfile(d->profile));
  return profile.calib;
}

Result<sim::Scenario> pricedScenario(const sim::Scenario& sc, const sync::StrategyDescriptor& d) {
  if (sc.profileGiven || d.profile.empty()) return sc;
  return sim::withProfile(sc, d.profile);
}

Result<sim::StrategyResult> simulateStrategy(const sim::Scenario& sc, std::string_view strategy,
                                             const sim::Progress& progress) {
  TIDE_ASSIGN_OR_RETURN(const sync::StrategyDescriptor* d, simulatedStrategy(strategy));
  const double cpu0 = processCpuSeconds();
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p, scenarioPlan(sc, *d));
  const double planCpu = processCpuSeconds() - cpu0;
  TIDE_ASSIGN_OR_RETURN(sim::Scenario priced, pricedScenario(sc, *d));
  TIDE_ASSIGN_OR_RETURN(sim::StrategyResult r, sim::simulateScenario(priced, p, progress));
  r.planCpuSeconds = planCpu;
  r.peakRssBytes = peakRssBytes();
  return r;
}

}  // namespace tide::harness
