#include "harness/sim/plan_prediction.h"

#include <algorithm>

#include "harness/sim/scenario_plans.h"
#include "sim/plan_lowering.h"
#include "workloads/cluster.h"

namespace tide::harness {

Result<PlanPrediction> predictPlan(const plan::TransferPlan& p, const std::string& clusterName,
                                   const std::string& hostTcp, const std::string& hostConvert) {
  PlanPrediction out;
  out.cluster = clusterName;
  out.hostTcpSource = out.hostConvertSource = "none";
  TIDE_ASSIGN_OR_RETURN(workloads::ClusterSpec cluster, workloads::loadCluster(clusterName));
  if (cluster.kind == workloads::ClusterKind::kEmulated) {
    TIDE_ASSIGN_OR_RETURN(HostFigures h, measureHost(hostTcp, hostConvert));
    out.hostTcpBps = h.tcpBps;
    out.hostTcpSource = h.tcpSource;
    out.hostConvertBps = h.convertBps;
    out.hostConvertSource = h.convertSource;
    out.hostCores = h.cores;
  }
  sim::LoweringOptions lo;
  lo.hostTcpBps = out.hostTcpBps;
  lo.hostConvertBps = out.hostConvertBps;
  lo.hostCores = std::max(1, out.hostCores);
  TIDE_ASSIGN_OR_RETURN(sim::Calibration costs, planCosts(p));
  TIDE_ASSIGN_OR_RETURN(out.result, sim::simulatePlan(p, cluster, costs, lo));
  out.planBytes = p.summarize().totalBytes;
  return out;
}

nlohmann::json PlanPrediction::inputsJson() const {
  return {{"cluster", cluster},
          {"host_tcp_gbps", hostTcpBps / 1e9},
          {"host_tcp_source", hostTcpSource},
          {"host_convert_gbps", hostConvertBps / 1e9},
          {"host_convert_source", hostConvertSource},
          {"host_cores", hostCores},
          {"plan_bytes", planBytes}};
}

}  // namespace tide::harness
