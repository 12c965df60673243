// `tide strategies`: the strategy table (engine/sync/strategy_registry.h):
// what each strategy is, how its updates are delivered, which commands run it.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/sync/strategy_registry.h"
#include "harness/command.h"

namespace tide::harness {

void addStrategiesCommand(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("strategies", "List the weight-sync strategies and what runs them");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print the table as JSON");
  cmd->callback([json] {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& d : sync::strategyTable()) {
      std::string runs = d.runsForReal() ? "tide sync" : "";
      if (d.simulated()) runs += std::string(runs.empty() ? "" : ", ") + "tide sim";
      std::string planner = d.planner ? std::string(d.planner->name) : std::string(d.name);
      out.push_back({{"name", d.name},
                     {"summary", d.summary},
                     {"models", d.models},
                     {"delivery", sync::deliveryName(d.delivery)},
                     {"plan", planner},
                     {"plans_from", d.input == sync::PlanInput::kBoxes ? "boxes" : "counts"},
                     {"profile", d.profile},
                     {"runs_in", runs}});
      if (*json) continue;
      std::printf("%-16s %s\n", std::string(d.name).c_str(), std::string(d.summary).c_str());
      std::printf("%-16s delivery %s, plan of %s from %s, runs in %s%s%s\n", "",
                  sync::deliveryName(d.delivery), planner.c_str(),
                  d.input == sync::PlanInput::kBoxes ? "boxes" : "counts", runs.c_str(),
                  d.profile.empty() ? "" : ", steps priced by profile ",
                  std::string(d.profile).c_str());
      if (!d.models.empty()) std::printf("%-16s models %s\n", "", std::string(d.models).c_str());
    }
    if (*json) std::printf("%s\n", out.dump(2).c_str());
  });
}

}  // namespace tide::harness
