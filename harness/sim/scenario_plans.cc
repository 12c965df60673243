#include "harness/sim/scenario_plans.h"

#include "engine/core/process_usage.h"
#include "engine/sync/update_problem.h"
#include "sim/report.h"

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

Result<sim::Scenario> loadCheckedScenario(const std::string& path, const std::string& strategy) {
  TIDE_ASSIGN_OR_RETURN(sim::Scenario sc, sim::loadScenario(path));
  if (auto st = checkScenarioStrategies(sc); !st.isOk()) return st.withContext(path);
  if (!strategy.empty()) {
    sc.strategy.names = {strategy};
    TIDE_RETURN_IF_ERROR(checkScenarioStrategies(sc));
  }
  return sc;
}

sync::UpdateSpec scenarioUpdate(const sim::Scenario& sc, const sync::StrategyDescriptor& d) {
  sync::UpdateSpec u;
  u.modelName = sc.model.name;
  u.model = sc.model;
  u.train = sc.train;
  u.infer = sc.infer;
  u.cluster = sc.cluster;
  u.placement.gpusPerNode = sc.cluster.gpusPerNode;
  u.placement.inferFirstGpu = sc.inferBase();
  u.placement.colocated = sc.colocated;
  u.strategy = &d;
  u.options = sc.strategy.options;
  u.options.bucketBytes = sc.strategy.bucketFor(d.name);
  return u;
}

Result<plan::TransferPlan> scenarioPlan(const sim::Scenario& sc,
                                        const sync::StrategyDescriptor& d) {
  TIDE_ASSIGN_OR_RETURN(auto problem, sync::UpdateProblem::build(scenarioUpdate(sc, d)));
  // Planned once: at 16,384 GPUs the base's holdings are over a gigabyte.
  return problem->makePlan(true);
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
  const bool replaced = sc.profileGiven && !d->profile.empty() && d->profile != priced.profile.name;
  sim::recordProfile(priced,
                     sc.profileGiven      ? sim::ProfileChoice::kScenario
                     : d->profile.empty() ? sim::ProfileChoice::kDefault
                                          : sim::ProfileChoice::kStrategy,
                     replaced ? std::string(d->profile) : std::string(), r);
  r.planCpuSeconds = planCpu;
  r.peakRssBytes = peakRssBytes();
  return r;
}

}  // namespace tide::harness
