#include "harness/regress/run_logged.h"

#include <chrono>
#include <thread>

#include "engine/core/clock.h"
#include "engine/exec/launch/rank_process.h"

extern char** environ;

namespace tide::harness::regress {

Result<int> runLogged(const std::vector<std::string>& argv, const std::string& log,
                      double timeoutSeconds, const std::vector<std::string>& env) {
  if (argv.empty()) return TIDE_ERROR(Code::kInvalidArgument, "no command");
  // The shell redirects, the log's path in the environment (not in the text).
  std::vector<std::string> args = {"/bin/sh", "-c", "exec \"$0\" \"$@\" >\"$TIDE_RUN_LOG\" 2>&1"};
  args.insert(args.end(), argv.begin(), argv.end());
  auto name = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> all = env;
  all.push_back("TIDE_RUN_LOG=" + log);
  for (char** e = environ; *e != nullptr; ++e) {
    bool replaced = false;
    for (const auto& kv : all) replaced |= name(kv) == name(*e);
    if (!replaced) all.push_back(*e);
  }
  TIDE_ASSIGN_OR_RETURN(auto proc, exec::RankProcess::spawn(args, all));
  Deadline d = Deadline::after(timeoutSeconds);
  while (proc->running()) {
    if (d.expired()) {
      proc->kill();
      return TIDE_ERROR(Code::kTimeout, argv[0] + " ran over " +
                                            std::to_string(static_cast<int>(timeoutSeconds)) +
                                            " s (log: " + log + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The shell execs the command: a command it cannot start exits 126/127.
  if (proc->exitCode() == 127 || proc->exitCode() == 126)
    return TIDE_ERROR(Code::kNotFound, "cannot start " + argv[0]);
  return proc->exitCode();
}

}  // namespace tide::harness::regress
