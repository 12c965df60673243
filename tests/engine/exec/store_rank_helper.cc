// A rank program for launcher_test: joins the run's store through the rank
// environment, meets the other ranks at a barrier and prints what it saw.
// argv[1] = "ok" | "fail" | "hang"; "fail" exits 3 on rank 1.

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "engine/exec/rendezvous/rank_env.h"

int main(int argc, char** argv) {
  using namespace tide;
  std::string mode = argc > 1 ? argv[1] : "ok";
  auto env = exec::readRankEnv();
  if (!env.isOk()) {
    std::fprintf(stderr, "%s\n", env.status().toString().c_str());
    return 2;
  }
  auto store = exec::connectStore(*env, 10);
  if (!store.isOk()) {
    std::fprintf(stderr, "%s\n", store.status().toString().c_str());
    return 2;
  }
  if (mode == "fail" && env->rank == 1) {
    std::fprintf(stderr, "rank 1 failing on purpose\n");
    return 3;
  }
  if (mode == "hang") ::pause();
  Status s = storeBarrier(**store, "meet", env->worldSize, 20);
  if (!s.isOk()) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 4;
  }
  std::printf("rank %d of %d met all\npartial line without newline", env->rank, env->worldSize);
  return 0;
}
