// `tide sim sweep`: p2p/broadcast ratio over inference EP, inference nodes and
// NIC bandwidth; CSV and JSON for harness/plots/sweep.py.

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "harness/command.h"
#include "harness/sim/scenario_plans.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/sweep.h"

namespace tide::harness {

void addSimSweepCommand(CLI::App& sim) {
  struct Opts {
    std::string scenario, csv, json;
    sim::SweepAxes axes;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = sim.add_subcommand("sweep", "Sweep inference EP, nodes and NIC bandwidth");
  cmd->add_option("--scenario", o->scenario, "scenario TOML")->required();
  cmd->add_option("--ep", o->axes.inferEp, "inference EP values (engine size)")->delimiter(',');
  cmd->add_option("--nodes", o->axes.inferNodes, "inference node counts")->delimiter(',');
  cmd->add_option("--nic-gbps", o->axes.nicGbps, "per-NIC rates in GB/s (bytes: 50 = 400 Gb/s)")
      ->delimiter(',');
  cmd->add_option("--csv", o->csv, "write CSV");
  cmd->add_option("--json", o->json, "write JSON");
  cmd->callback([o] {
    sim::Scenario sc = orThrow(loadCheckedScenario(o->scenario));
    if (o->axes.inferEp.empty() && o->axes.inferNodes.empty() && o->axes.nicGbps.empty()) {
      throw StatusError(
          TIDE_ERROR(Code::kInvalidArgument, "give at least one of --ep, --nodes, --nic-gbps"));
    }
    auto pts = orThrow(sim::runSweep(sc, o->axes, [](const sim::Scenario& s, std::string_view n) {
      return simulateStrategy(s, n);
    }));
    std::string csv = sim::sweepCsv(pts);
    std::fputs(csv.c_str(), stdout);
    if (!o->csv.empty()) {
      std::ofstream out(o->csv);
      out << csv;
      if (!out) throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "cannot write " + o->csv));
    }
    if (!o->json.empty()) orThrow(sim::writeJsonFile(o->json, sim::sweepJson(pts)));
  });
}

}  // namespace tide::harness
