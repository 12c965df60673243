#include "harness/validation/validation_run.h"

#include <algorithm>

#include "harness/timeline.h"
#include "traces/chrome_trace.h"

namespace tide::harness {

Result<ValidationRun> validateRun(const nlohmann::json& real, const plan::TransferPlan& p,
                                  const std::string& clusterName, const HostFigures& host,
                                  double threshold) {
  // Before the prediction: a file that is no sync result would otherwise be
  // reported as a cluster or plan problem.
  TIDE_RETURN_IF_ERROR(sim::checkSyncSchema(real));
  TIDE_ASSIGN_OR_RETURN(PlanPrediction pred, predictPlan(p, clusterName, host));
  const sim::StrategyResult& r = pred.result;
  TIDE_ASSIGN_OR_RETURN(
      sim::Validation v,
      sim::compareWithReal(real, r.seconds, static_cast<double>(pred.planBytes), threshold));
  TIDE_ASSIGN_OR_RETURN(plan::Schedule sched, plan::Schedule::build(p));
  ValidationRun out{std::move(pred),        std::move(v), std::move(sched), {}, {},
                    "the run recorded none"};
  if (real.contains("units")) {
    TIDE_ASSIGN_OR_RETURN(out.realUnits, sim::unitTimesFromJson(real["units"]));
    auto cmp =
        sim::compareUnits(out.schedule, out.realUnits, sim::simulatedUnits(out.prediction.result));
    if (cmp.isOk()) {
      out.units = *cmp;
    } else if (cmp.status().code() == Code::kInvalidArgument) {
      out.unitsWhy = cmp.status().message();
    } else {
      return cmp.status();
    }
  }
  std::vector<double> secs;
  for (const auto& s : out.steps.steps) secs.push_back(s.realSeconds);
  std::sort(secs.begin(), secs.end());
  const size_t n = secs.size();
  out.realMedianSeconds = n % 2 ? secs[n / 2] : (secs[n / 2 - 1] + secs[n / 2]) / 2;
  out.medianError = out.prediction.result.seconds / out.realMedianSeconds - 1;
  return out;
}

traces::ChromeTrace ValidationRun::timeline(const plan::TransferPlan& p) const {
  traces::ChromeTrace t;
  addUnits(t, kRealProcess, "real (tide sync)", p, schedule, realUnits);
  addUnits(t, kSimProcess, "simulated (tide sim)", p, schedule,
           sim::simulatedUnits(prediction.result));
  addOtherWork(t, kSimProcess, prediction.result);
  return t;
}

nlohmann::json ValidationRun::toJson() const {
  nlohmann::json j = steps.toJson();
  if (units) j["units"] = units->toJson();
  j.update(prediction.inputsJson());
  j["sim_lower_bound_seconds"] = prediction.result.lowerBoundSeconds;
  j["sim_bottleneck"] = prediction.result.bottleneck;
  return j;
}

}  // namespace tide::harness
