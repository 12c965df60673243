// The `tide` command line.

#include <cstdio>
#include <exception>

#include "engine/core/status.h"
#include "harness/command.h"

int main(int argc, char** argv) {
  CLI::App app{"tide: testbed for RL weight synchronization and the rollout data plane"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tide 0.1.0");
  tide::harness::addBackendsCommand(app);
  tide::harness::addStrategiesCommand(app);
  tide::harness::addRolloutCommand(app);
  tide::harness::addPlanCommand(app);
  tide::harness::addCompareCommand(app);
  tide::harness::addBenchCommand(app);
  tide::harness::addLaunchCommand(app);
  tide::harness::addSimCommand(app);
  tide::harness::addValidateCommand(app);
  tide::harness::addTraceCommand(app);
  tide::harness::addSyncCommand(app);
  tide::harness::addReproduceCommand(app);
  tide::harness::addStoreCommand(app);
  tide::harness::addRegressCommand(app);
  tide::harness::addAbCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {
    // A command's own verdict (e.g. a regression found): its message and exit code.
    std::fprintf(stderr, "tide: %s\n", e.what());
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // One line, exit 2: CLI11's own multi-line usage dump is not wanted here.
    std::fprintf(stderr, "tide: error: %s (see tide --help)\n", e.what());
    return 2;
  } catch (const tide::StatusError& e) {
    // Bad input is the user's to fix: the message alone. Anything else also
    // names the source line that raised it, for a bug report.
    const tide::Code c = e.status.code();
    const bool input = c == tide::Code::kInvalidArgument || c == tide::Code::kNotFound;
    std::fprintf(stderr, "tide: error: %s\n",
                 input ? e.status.message().c_str() : e.status.toString().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tide: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
