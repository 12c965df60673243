#include "engine/exec/rendezvous/rank_env.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

#include "engine/core/errno_status.h"
#include "engine/core/fd.h"
#include "engine/core/units.h"
#include "engine/exec/rendezvous/tcp_store.h"

namespace tide::exec {
namespace {

struct Source {
  const char* name;
  const char* rank;
  const char* size;
};

constexpr Source kSources[] = {
    {"TIDE", "TIDE_RANK", "TIDE_WORLD_SIZE"},
    {"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    {"torchrun", "RANK", "WORLD_SIZE"},
};

Result<int> parseInt(const std::string& name, const std::string& text, int64_t max) {
  auto v = parseCount(text);
  if (!v.isOk() || *v > static_cast<uint64_t>(max))
    return TIDE_ERROR(Code::kInvalidArgument, "environment variable " + name + "='" + text +
                                                  "' is not an integer in 0.." +
                                                  std::to_string(max));
  return static_cast<int>(*v);
}

}  // namespace

Result<RankEnv> readRankEnv(const EnvLookup& lookupIn) {
  EnvLookup lookup = lookupIn ? lookupIn : [](const std::string& n) -> std::optional<std::string> {
    const char* v = std::getenv(n.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  RankEnv env;
  const Source* src = nullptr;
  for (const Source& s : kSources)
    if (lookup(s.rank) && lookup(s.size)) {
      src = &s;
      break;
    }
  if (src == nullptr)
    return TIDE_ERROR(Code::kNotFound,
                      "no rank environment (TIDE_RANK/TIDE_WORLD_SIZE, OMPI_COMM_WORLD_*, "
                      "SLURM_PROCID/SLURM_NTASKS or RANK/WORLD_SIZE)");
  env.source = src->name;
  TIDE_ASSIGN_OR_RETURN(env.worldSize, parseInt(src->size, *lookup(src->size), 1 << 20));
  TIDE_ASSIGN_OR_RETURN(env.rank, parseInt(src->rank, *lookup(src->rank), 1 << 20));
  if (env.worldSize < 1 || env.rank >= env.worldSize)
    return TIDE_ERROR(Code::kInvalidArgument, std::string(src->rank) + "=" +
                                                  std::to_string(env.rank) + " is outside " +
                                                  src->size + "=" + std::to_string(env.worldSize));

  auto addr = lookup("TIDE_MASTER_ADDR");
  if (!addr) addr = lookup("MASTER_ADDR");
  if (addr && !addr->empty()) env.masterAddr = *addr;
  auto port = lookup("TIDE_MASTER_PORT");
  std::string portName = "TIDE_MASTER_PORT";
  if (!port) {
    port = lookup("MASTER_PORT");
    portName = "MASTER_PORT";
  }
  if (port) {
    TIDE_ASSIGN_OR_RETURN(env.masterPort, parseInt(portName, *port, 65535));
  } else if (env.worldSize > 1) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "world size " + std::to_string(env.worldSize) +
                          " but no TIDE_MASTER_PORT (or MASTER_PORT): ranks cannot find the "
                          "rendezvous store");
  }

  if (auto t = lookup("TIDE_RUN_TOKEN")) {
    env.token = *t;
  } else if (auto t2 = lookup("TORCHELASTIC_RUN_ID")) {
    env.token = *t2;
  } else if (auto job = lookup("SLURM_JOB_ID")) {
    env.token = *job + "." + lookup("SLURM_STEP_ID").value_or("0");
  }
  if (env.token.empty() && env.worldSize > 1)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "TIDE_RUN_TOKEN is not set: give every rank the same random token "
                      "(tide launch does this; with mpirun use -x TIDE_RUN_TOKEN)");
  auto ext = lookup("TIDE_STORE_EXTERNAL");
  env.storeExternal = ext && *ext == "1";
  if (auto l = lookup("TIDE_LISTEN_ADDR")) env.listenAddress = *l;
  return env;
}

Result<std::string> listenAddressFor(const RankEnv& env) {
  if (!env.listenAddress.empty()) return env.listenAddress;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(env.masterAddr.c_str(), nullptr, &hints, &res); rc != 0 || !res)
    return TIDE_ERROR(
        Code::kInvalidArgument,
        "master address '" + env.masterAddr + "' does not resolve to IPv4: " + gai_strerror(rc));
  sockaddr_in master{};
  std::memcpy(&master, res->ai_addr, sizeof master);
  freeaddrinfo(res);
  if ((ntohl(master.sin_addr.s_addr) >> 24) == 127) return std::string("127.0.0.1");
  // A connected UDP socket sends nothing; the kernel picks the route and
  // with it the source address.
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return TIDE_ERRNO("socket");
  master.sin_port = htons(static_cast<uint16_t>(env.masterPort ? env.masterPort : 9));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&master), sizeof master) != 0)
    return TIDE_ERRNO("no route to the master " + env.masterAddr);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0)
    return TIDE_ERRNO("getsockname");
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf);
  return std::string(buf);
}

Result<std::unique_ptr<Store>> connectStore(const RankEnv& env, double connectTimeoutSeconds) {
  if (env.rank == 0 && !env.storeExternal) {
    auto s = TcpStore::host(env.masterAddr, env.masterPort, env.token);
    if (!s.isOk())
      return s.status().withContext("rank 0 cannot host the rendezvous store on " + env.masterAddr +
                                    ":" + std::to_string(env.masterPort));
    return std::unique_ptr<Store>(std::move(s).value());
  }
  TIDE_ASSIGN_OR_RETURN(
      auto s, TcpStore::connect(env.masterAddr, env.masterPort, env.token, connectTimeoutSeconds));
  return std::unique_ptr<Store>(std::move(s));
}

}  // namespace tide::exec
