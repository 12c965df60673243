// `tide plan`: plan one weight update (reshard + strategy) and print its
// summary, lower bound and bottleneck; --json writes the plan itself.

#include <array>
#include <cstdio>
#include <fstream>

#include "engine/core/clock.h"
#include "engine/core/process_usage.h"
#include "engine/core/units.h"
#include "engine/plan/lower_bound.h"
#include "engine/plan/schedule.h"
#include "harness/command.h"
#include "harness/run_context.h"
#include "harness/workload_options.h"

namespace tide::harness {

namespace {

struct PlanArgs {
  WorkloadOptions workload;
  std::string json;
};

void runPlan(const PlanArgs& a) {
  Stopwatch sw;
  const double cpu0 = processCpuSeconds();  // planning is single-threaded
  auto w = orThrow(loadWorkload(a.workload));
  const double reshardSeconds = sw.seconds();
  auto p = orThrow(w->makePlan());
  const double planSeconds = sw.seconds();
  const double planCpuSeconds = processCpuSeconds() - cpu0;
  auto lb = orThrow(plan::lowerBound(p, boundCluster(w->cluster)));
  const auto s = p.summarize();
  const double rss = peakRssBytes();

  uint64_t trainers = 0;
  for (const auto& r : p.ranks) trainers += r.role == plan::Role::kTrainer;
  uint64_t maxSent = 0, maxRecv = 0;
  for (auto b : s.sentBytes) maxSent = std::max(maxSent, b);
  for (auto b : s.receivedBytes) maxRecv = std::max(maxRecv, b);
  std::printf("plan      %s: %s (scale %d), train %s -> infer %s on %s\n", p.strategy.c_str(),
              w->spec.name.c_str(), a.workload.scale, w->train.toString().c_str(),
              w->infer.toString().c_str(), w->cluster.name.c_str());
  std::printf("ranks     %zu (%lu training, %zu inference), %zu tensors, %zu stages, %zu buckets\n",
              p.ranks.size(), static_cast<unsigned long>(trainers), p.ranks.size() - trainers,
              p.tensors.size(), p.stages.size(), p.buckets.size());
  std::printf("moves     %lu:", static_cast<unsigned long>(s.moves));
  for (int k = 0; k < 4; ++k) {
    std::printf(" %s %lu (%s)", plan::moveKindName(static_cast<plan::MoveKind>(k)),
                static_cast<unsigned long>(s.movesByKind[k]),
                formatBytes(s.bytesByKind[k]).c_str());
  }
  if (!p.work.empty()) {
    // A plan by steps (a model at scale): its work by kind; the simulator
    // times it (tide sim), the move bound below does not see it.
    std::array<uint64_t, plan::kStepKindCount> kinds{};
    for (const auto& st : p.work.steps) ++kinds[static_cast<int>(st.kind)];
    std::printf("\nsteps     %zu, %zu edges, %zu groups, %zu locks:", p.work.steps.size(),
                p.work.edges.size(), p.work.groups.size(), p.work.locks.size());
    for (int k = 0; k < plan::kStepKindCount; ++k)
      if (kinds[k] > 0)
        std::printf(" %s %lu", plan::stepKindName(static_cast<plan::StepKind>(k)),
                    static_cast<unsigned long>(kinds[k]));
    std::printf("; model %s as sent", formatBytes(static_cast<uint64_t>(p.work.wireBytes)).c_str());
  }
  std::printf("\nbytes     network %s, intra-node %s, local %s\n",
              formatBytes(s.bytesByPath[2]).c_str(), formatBytes(s.bytesByPath[1]).c_str(),
              formatBytes(s.bytesByPath[0]).c_str());
  std::printf("per rank  max sent %s, max received %s\n", formatBytes(maxSent).c_str(),
              formatBytes(maxRecv).c_str());
  std::printf("bound     %.4f s, bottleneck %s (%s at %.1f GB/s)\n", lb.seconds,
              lb.bottleneck.name.c_str(), formatBytes(lb.bottleneck.bytes).c_str(),
              lb.bottleneck.bytesPerSecond / kGB);
  for (const auto* l : {&lb.nicTx, &lb.nicRx, &lb.nvlink, &lb.pcie, &lb.fabric}) {
    if (!l->name.empty()) std::printf("          %-28s %.4f s\n", l->name.c_str(), l->seconds());
  }
  std::printf("planning  %.2f s (reshard %.2f s), %.2f s CPU, peak RSS %.0f MB\n", planSeconds,
              reshardSeconds, planCpuSeconds, rss / 1e6);
  // What both executors run: the plan lowered into units (engine/plan/schedule.h).
  const plan::Schedule sched = orThrow(plan::Schedule::build(p));
  std::printf("schedule  %zu units in %lu pieces, %zu gates\n", sched.units.size(),
              static_cast<unsigned long>(sched.pieces), sched.gates.size());

  if (!a.json.empty()) {
    auto j = p.toJson();
    j["summary"] = s.toJson();
    j["lower_bound"] = lb.toJson();
    j["schedule"] = {
        {"units", sched.units.size()}, {"pieces", sched.pieces}, {"gates", sched.gates.size()}};
    j["planning_seconds"] = planSeconds;
    j["planning_cpu_seconds"] = planCpuSeconds;
    j["peak_rss_bytes"] = rss;
    j["context"] = runContext();
    std::ofstream out(a.json);
    out << j.dump() << "\n";
    out.close();
    if (!out) {
      throw StatusError(TIDE_ERROR(Code::kUnavailable, "cannot write --json file " + a.json));
    }
  }
}

}  // namespace

void addPlanCommand(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan", "Plan a weight update: reshard + strategy; print the summary and lower bound");
  args->workload.addTo(cmd);
  args->workload.inferDtype = "bf16";  // as tide sync: plan what a real run moves
  args->workload.addInferDtypeTo(cmd);
  cmd->add_option("--json", args->json, "write the plan (tide.plan/2) with summary and bound");
  cmd->callback([args] { runPlan(*args); });
}

}  // namespace tide::harness
