#pragma once
// Scenario -> plan: the strategy table (engine/sync) meets the simulator
// (sim/), which runs plans and never makes them. Every `tide sim`,
// `sim sweep`, `sim rl` and `reproduce` prediction goes through here, so a
// strategy in the table is simulated without touching sim/.

#include <string_view>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "engine/sync/strategy_registry.h"
#include "engine/sync/update_problem.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tide::harness {

// Every strategy the scenario names exists and can be simulated.
[[nodiscard]] Status checkScenarioStrategies(const sim::Scenario& sc);
// loadScenario, then checkScenarioStrategies; a non-empty `strategy` then
// narrows the scenario to that one strategy (checked too).
[[nodiscard]] Result<sim::Scenario> loadCheckedScenario(const std::string& path,
                                                        const std::string& strategy = "");

// The update a scenario describes for strategy `d`, for the one problem
// builder (engine/sync/update_problem.h).
sync::UpdateSpec scenarioUpdate(const sim::Scenario& sc, const sync::StrategyDescriptor& d);
// The plan the strategy makes for the scenario's model, layouts, placement
// and [strategy] parameters.
[[nodiscard]] Result<plan::TransferPlan> scenarioPlan(const sim::Scenario& sc,
                                                      const sync::StrategyDescriptor& d);

// The costs a plan's steps are priced with outside a scenario: its
// strategy's cost profile (none needed for a plan without steps).
[[nodiscard]] Result<sim::Calibration> planCosts(const plan::TransferPlan& p);

// The scenario as it prices strategy `d`: its own `[strategy] profile` when
// it gives one, else the descriptor's profile (the scenario's default for a
// strategy that names none); the scenario's overrides apply either way.
[[nodiscard]] Result<sim::Scenario> pricedScenario(const sim::Scenario& sc,
                                                   const sync::StrategyDescriptor& d);

// Plans and simulates one strategy of the scenario, priced by pricedScenario.
[[nodiscard]] Result<sim::StrategyResult> simulateStrategy(const sim::Scenario& sc,
                                                           std::string_view strategy,
                                                           const sim::Progress& progress = {});

}  // namespace tide::harness
