#pragma once
// A recorded plan (tide.plan/2) in the simulator on a cluster spec: the one
// path by which `tide validate` and `tide sim --plan` predict a real run,
// so the prediction beside a run and the one a validation checks are the
// same figure.

#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "harness/sim/host_probes.h"
#include "sim/simulator.h"

namespace tide::harness {

struct PlanPrediction {
  sim::StrategyResult result;
  std::string cluster;
  double hostTcpBps = 0;      // 0: intra-node tcp treated as unlimited
  std::string hostTcpSource;  // none | probe | given
  // Emulated clusters: one core's FP8 conversion rate (fp8PassBytes per
  // second; 0: conversions free) and the cores the ranks share.
  double hostConvertBps = 0;
  std::string hostConvertSource;  // none | probe | given
  int hostCores = 0;
  // hostConvertSource "probe": the plan's own conversions timed on one core
  // (conversion_probe.h), each unit priced at its time; else all at the rate.
  bool convertUnitsProbed = false;
  uint64_t convertUnits = 0, convertShapes = 0;
  double convertUnitsSeconds = 0, convertUnitsBps = 0;
  uint64_t planBytes = 0;  // the plan's total: network + intra-node + local
  // What the prediction was made on, so a recorded result can be rerun.
  nlohmann::json inputsJson() const;
  // The host's figures it used, a line each (none on other clusters).
  std::string hostLines() const;
};

// `hostTcp`: "probe" (measure one tcp stream on 127.0.0.1 now), a rate
// ("10Gbps") or "none"; `hostConvert` the same for one core's FP8
// conversion (host_probes.h), where "probe" also times the plan's own
// conversions (conversion_probe.h). Used on emulated clusters only, where
// every node's ranks share this host.
[[nodiscard]] Result<PlanPrediction> predictPlan(const plan::TransferPlan& p,
                                                 const std::string& clusterName,
                                                 const std::string& hostTcp,
                                                 const std::string& hostConvert = "probe");
// The host's figures for a prediction on `clusterName`: measured (or
// given) on emulated clusters, none elsewhere.
[[nodiscard]] Result<HostFigures> hostFiguresFor(const std::string& clusterName,
                                                 const std::string& hostTcp,
                                                 const std::string& hostConvert);
// The same on figures measured before (a matrix measures them once for
// all its rows); the plan's conversions are timed when host.convertSource
// is "probe".
[[nodiscard]] Result<PlanPrediction> predictPlan(const plan::TransferPlan& p,
                                                 const std::string& clusterName,
                                                 const HostFigures& host);

}  // namespace tide::harness
