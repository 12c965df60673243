// `tide backends`: which transports this build has, and why the others are missing.

#include <cstdio>

#include "engine/transport/registry.h"
#include "harness/command.h"

namespace tide::harness {

void addBackendsCommand(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("backends", "List the transport backends compiled into this build");
  cmd->callback([] {
    for (const char* b : {"tcp", "shm", "rdma", "nccl"}) {
      std::string why = transport::whyNotCompiled(b);
      std::printf("%-5s %s\n", b, why.empty() ? "compiled" : ("not compiled: " + why).c_str());
    }
  });
}

}  // namespace tide::harness
