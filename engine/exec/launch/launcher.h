#pragma once
// Starts N local rank processes of one command (what `tide launch` does):
// hosts the rendezvous store for them, gives each TIDE_RANK, TIDE_WORLD_SIZE,
// TIDE_MASTER_ADDR/PORT, TIDE_RUN_TOKEN (fresh random per run) and
// TIDE_STORE_EXTERNAL=1, streams their stdout/stderr line by line prefixed
// with "[rank k] ", and when one rank fails stops the others (SIGTERM, then
// SIGKILL after a grace period). Ctrl-C (SIGINT/SIGTERM to the launcher) is
// forwarded to every rank the same way.

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::exec {

struct LaunchOptions {
  int ranks = 1;
  std::vector<std::string> command;  // argv; argv[0] is looked up in PATH
  std::string masterAddr = "127.0.0.1";
  double killGraceSeconds = 3;
  std::map<std::string, std::string> env;  // extra variables for every rank
  int outFd = 1;                           // where prefixed stdout lines go
  int errFd = 2;                           // where prefixed stderr lines and notes go
  // A caller's own Ctrl-C flag, set by its handler before launch() installs
  // the launcher's: a signal in between counts as an interrupt of the launch.
  const std::atomic<bool>* interrupted = nullptr;
};

// Runs the ranks to completion. Returns the exit code to propagate: 0 when
// every rank exited 0, else the first failing rank's code (128+signal when it
// was killed by a signal, 130 when the launcher was interrupted). An error
// Status only when the ranks could not be started.
Result<int> launch(const LaunchOptions& options);

}  // namespace tide::exec
