#pragma once
// Where a rank learns who it is and where the rendezvous store lives. tide's
// own variables come first; the ones mpirun (OpenMPI), Slurm and torchrun set
// are accepted so those launchers work unchanged:
//
//   rank        TIDE_RANK | OMPI_COMM_WORLD_RANK | PMI_RANK | SLURM_PROCID | RANK
//   world size  TIDE_WORLD_SIZE | OMPI_COMM_WORLD_SIZE | PMI_SIZE | SLURM_NTASKS | WORLD_SIZE
//   master      TIDE_MASTER_ADDR / TIDE_MASTER_PORT | MASTER_ADDR / MASTER_PORT
//   token       TIDE_RUN_TOKEN | TORCHELASTIC_RUN_ID | SLURM_JOB_ID.SLURM_STEP_ID
//   store host  TIDE_STORE_EXTERNAL=1: the store is served by someone else
//               (tide launch), so rank 0 connects like the others.
//   listen      TIDE_LISTEN_ADDR: the address this rank's tcp transport
//               listens on and gives its peers (see listenAddressFor).
//
// The token keeps ranks of different runs apart; it is not a secret against
// other users who can read the environment of the job.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"

namespace tide::exec {

struct RankEnv {
  int rank = 0;
  int worldSize = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  std::string token;
  bool storeExternal = false;
  std::string listenAddress;  // TIDE_LISTEN_ADDR (empty: not set)
  std::string source;         // which variables were used, for messages ("TIDE", "OMPI", ...)
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Reads the process environment (or `lookup`, for tests). Returns nullopt-like
// kNotFound when no rank variables are set at all (a single, unlaunched process).
Result<RankEnv> readRankEnv(const EnvLookup& lookup = {});

// The address a rank's transport listens on and publishes to its peers:
// TIDE_LISTEN_ADDR; else loopback when the master is on loopback (one host);
// else this host's source address on its route to the master, the address
// the other hosts reach it by.
Result<std::string> listenAddressFor(const RankEnv& env);

// Rank 0 hosts the store on masterAddr:masterPort unless storeExternal; the
// others connect, retrying for connectTimeoutSeconds.
Result<std::unique_ptr<Store>> connectStore(const RankEnv& env, double connectTimeoutSeconds);

}  // namespace tide::exec
