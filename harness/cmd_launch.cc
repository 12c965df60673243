// `tide launch -n N -- <cmd...>`: runs N local ranks of a command with the
// rank environment set (see engine/exec/launch/launcher.h) and exits with the first
// failing rank's code.

#include <cstdio>
#include <cstdlib>

#include "engine/core/units.h"
#include "engine/exec/launch/launcher.h"
#include "harness/command.h"

namespace tide::harness {

void addLaunchCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "launch",
      "Start N local ranks of a command (TIDE_RANK, TIDE_WORLD_SIZE, TIDE_MASTER_ADDR/"
      "PORT, TIDE_RUN_TOKEN set; output prefixed by rank)");
  auto n = std::make_shared<std::string>("1");
  auto argv = std::make_shared<std::vector<std::string>>();
  auto grace = std::make_shared<double>(3.0);
  cmd->add_option("-n,--ranks", *n, "number of ranks")->required();
  cmd->add_option("--kill-grace", *grace, "seconds between SIGTERM and SIGKILL when stopping ranks")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("command", *argv, "the command each rank runs (after --)")->required();
  cmd->callback([n, argv, grace] {
    auto count = parseCount(*n);
    if (!count.isOk() || *count < 1 || *count > 4096)
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument,
                                   "-n must be a number of ranks in 1..4096, got '" + *n + "'"));
    exec::LaunchOptions o;
    o.ranks = static_cast<int>(*count);
    o.command = *argv;
    o.killGraceSeconds = *grace;
    int rc = orThrow(exec::launch(o));
    std::fflush(stdout);
    std::fflush(stderr);
    if (rc != 0) std::exit(rc);  // the ranks' own exit code, not tide's generic 1
  });
}

}  // namespace tide::harness
