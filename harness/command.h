#pragma once
// Each `tide` subcommand lives in its own harness/cmd_*.cc and adds itself to
// the CLI through one of these functions (listed once, in main.cc). A command
// reports failure by throwing StatusError (caught in main: one line, exit 1).

#include <CLI/CLI.hpp>

namespace tide::harness {

void addBackendsCommand(CLI::App& app);
void addStrategiesCommand(CLI::App& app);
void addRolloutCommand(CLI::App& app);
void addPlanCommand(CLI::App& app);
void addCompareCommand(CLI::App& app);
void addBenchCommand(CLI::App& app);
void addLaunchCommand(CLI::App& app);
void addSimCommand(CLI::App& app);
void addValidateCommand(CLI::App& app);
void addTraceCommand(CLI::App& app);
void addSyncCommand(CLI::App& app);
void addReproduceCommand(CLI::App& app);
void addStoreCommand(CLI::App& app);
void addRegressCommand(CLI::App& app);
void addAbCommand(CLI::App& app);

}  // namespace tide::harness
