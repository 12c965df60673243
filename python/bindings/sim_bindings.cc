// The planner and the simulator from Python: the same calls `tide
// strategies`, `tide plan`, `tide sim` and `tide sim compare` make, returning
// their JSON documents as plain dicts (the schemas of docs/formats.md).

#include <pybind11/stl.h>

#include "engine/sync/strategy_registry.h"
#include "harness/sim/compare.h"
#include "harness/sim/scenario_plans.h"
#include "python/bindings/json_object.h"
#include "python/bindings/module_parts.h"
#include "python/bindings/status_error.h"
#include "sim/report.h"

namespace tide::python {
namespace py = pybind11;

void bindSim(py::module_& m) {
  m.def(
      "strategies",
      [] {
        py::list out;
        for (const auto& d : sync::strategyTable()) {
          py::dict row;
          row["name"] = std::string(d.name);
          row["summary"] = std::string(d.summary);
          row["models"] = std::string(d.models);
          row["profile"] = std::string(d.profile);
          row["delivery"] = sync::deliveryName(d.delivery);
          row["runs_for_real"] = d.runsForReal();
          row["simulated"] = d.simulated();
          out.append(row);
        }
        return out;
      },
      "Every weight-sync strategy tide plans: name, summary, the system it models, its profile.");
  m.def(
      "scenario",
      [](const std::string& path) {
        sim::Scenario sc;
        {
          py::gil_scoped_release nogil;
          sc = check(harness::loadCheckedScenario(path));
        }
        py::dict out;
        out["name"] = sc.name;
        out["strategies"] = sc.strategy.names;
        out["inputs"] = toPython(sim::scenarioInputsJson(sc));
        return out;
      },
      py::arg("path"), "A scenario file's inputs as resolved (defaults and presets filled in).");
  m.def(
      "plan",
      [](const std::string& path, const std::string& strategy) {
        nlohmann::json j;
        {
          py::gil_scoped_release nogil;
          sim::Scenario sc = check(harness::loadCheckedScenario(path, strategy));
          const auto* d = check(sync::findStrategy(strategy));
          j = check(harness::scenarioPlan(sc, *d)).toJson();
        }
        return toPython(j);
      },
      py::arg("path"), py::arg("strategy"),
      "The plan `strategy` makes for the scenario (the document of `tide plan --json`).");
  m.def(
      "simulate",
      [](const std::string& path, std::optional<std::string> strategy) {
        nlohmann::json out;
        {
          py::gil_scoped_release nogil;
          sim::Scenario sc = check(harness::loadCheckedScenario(path, strategy.value_or("")));
          out["schema"] = "tide.sim.report/1";
          out["scenario"] = sc.name;
          out["inputs"] = sim::scenarioInputsJson(sc);
          out["results"] = nlohmann::json::array();
          for (const auto& name : sc.strategy.names)
            out["results"].push_back(check(harness::simulateStrategy(sc, name)).toJson());
        }
        return toPython(out);
      },
      py::arg("path"), py::arg("strategy") = py::none(),
      "Simulates the scenario's strategies (or `strategy` alone): the `tide sim --json` report.");
  m.def(
      "compare",
      [](const std::string& path, std::vector<std::string> strategies, const std::string& band) {
        nlohmann::json out;
        {
          py::gil_scoped_release nogil;
          sim::Scenario sc = check(harness::loadCheckedScenario(path));
          harness::CompareOptions o;
          o.strategies = std::move(strategies);
          o.band = check(harness::parseBandMode(band));
          out = harness::compareJson(sc, check(harness::compareStrategies(sc, o)));
        }
        return toPython(out);
      },
      py::arg("path"), py::arg("strategies") = std::vector<std::string>{}, py::arg("band") = "none",
      "Every applicable strategy ranked by predicted time (`tide sim compare --json`); band: "
      "none, ends, full or auto.");
}

}  // namespace tide::python
