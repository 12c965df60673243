#include "harness/sim/plan_prediction.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/plan/schedule.h"
#include "harness/sim/conversion_probe.h"
#include "harness/sim/scenario_plans.h"
#include "sim/plan_lowering.h"
#include "workloads/cluster.h"

namespace tide::harness {

Result<HostFigures> hostFiguresFor(const std::string& clusterName, const std::string& hostTcp,
                                   const std::string& hostConvert) {
  TIDE_ASSIGN_OR_RETURN(workloads::ClusterSpec cluster, workloads::loadCluster(clusterName));
  if (cluster.kind != workloads::ClusterKind::kEmulated) return HostFigures{};
  return measureHost(hostTcp, hostConvert);
}

Result<PlanPrediction> predictPlan(const plan::TransferPlan& p, const std::string& clusterName,
                                   const std::string& hostTcp, const std::string& hostConvert) {
  TIDE_ASSIGN_OR_RETURN(HostFigures host, hostFiguresFor(clusterName, hostTcp, hostConvert));
  return predictPlan(p, clusterName, host);
}

Result<PlanPrediction> predictPlan(const plan::TransferPlan& p, const std::string& clusterName,
                                   const HostFigures& host) {
  PlanPrediction out;
  out.cluster = clusterName;
  out.hostTcpSource = out.hostConvertSource = "none";
  TIDE_ASSIGN_OR_RETURN(workloads::ClusterSpec cluster, workloads::loadCluster(clusterName));
  sim::LoweringOptions lo;
  if (cluster.kind == workloads::ClusterKind::kEmulated) {
    out.hostTcpBps = lo.hostTcpBps = host.tcpBps;
    out.hostTcpSource = host.tcpSource;
    out.hostConvertBps = lo.hostConvertBps = host.convertBps;
    out.hostConvertSource = host.convertSource;
    out.hostCores = host.cores;
    if (host.convertSource == "probe" && host.convertBps > 0) {
      TIDE_ASSIGN_OR_RETURN(const plan::Schedule sched, plan::Schedule::build(p));
      TIDE_ASSIGN_OR_RETURN(ConversionProbe probe, probePlanConversions(p, sched));
      out.convertUnitsProbed = true;
      out.convertUnits = probe.units;
      out.convertShapes = probe.shapes;
      out.convertUnitsSeconds = probe.seconds;
      out.convertUnitsBps = probe.bytesPerSecond();
      lo.convertSeconds = std::move(probe.unitSeconds);
    }
  }
  lo.hostCores = std::max(1, out.hostCores);
  TIDE_ASSIGN_OR_RETURN(sim::Calibration costs, planCosts(p));
  TIDE_ASSIGN_OR_RETURN(out.result, sim::simulatePlan(p, cluster, costs, lo));
  out.planBytes = p.summarize().totalBytes;
  return out;
}

nlohmann::json PlanPrediction::inputsJson() const {
  nlohmann::json j = {{"cluster", cluster},
                      {"host_tcp_gbps", hostTcpBps / 1e9},
                      {"host_tcp_source", hostTcpSource},
                      {"host_convert_gbps", hostConvertBps / 1e9},
                      {"host_convert_source", hostConvertSource},
                      {"host_cores", hostCores},
                      {"plan_bytes", planBytes}};
  if (convertUnitsProbed) {
    j["host_convert_units"] = {{"units", convertUnits},
                               {"shapes", convertShapes},
                               {"seconds", convertUnitsSeconds},
                               {"gbps", convertUnitsBps / 1e9}};
  }
  return j;
}

std::string PlanPrediction::hostLines() const {
  std::string out;
  if (hostTcpSource != "none") {
    out += fmt::format("host tcp between ranks of a node: {:.3f} GB/s ({})\n", hostTcpBps / 1e9,
                       hostTcpSource);
  }
  if (hostConvertSource != "none") {
    out += fmt::format("host FP8 conversion: {:.3f} GB/s per core ({}), {} cores\n",
                       hostConvertBps / 1e9, hostConvertSource, hostCores);
  }
  if (convertUnitsProbed) {
    out += fmt::format(
        "the plan's FP8 conversions on one core: {:.3f} s for {} units ({} shapes), {:.3f} GB/s\n",
        convertUnitsSeconds, convertUnits, convertShapes, convertUnitsBps / 1e9);
  }
  return out;
}

}  // namespace tide::harness
