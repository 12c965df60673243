#pragma once
// The one list of compiled transport backends (no self-registering statics).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/transport/transport.h"

namespace tide::transport {

struct TransportConfig {
  std::string backend;  // tcp | shm | rdma | nccl
  int rank = 0;
  int worldSize = 1;
  Store* store = nullptr;                   // rendezvous; must outlive create()
  std::string listenAddress = "127.0.0.1";  // tcp: interface to listen on
  // tcp: the address its connections leave from (empty: the kernel's
  // choice); a node of several NICs binds its rank's NIC (source routing).
  std::string sourceAddress;
  int streams = 4;                   // tcp: connections per peer; rdma: QPs per peer
  std::vector<std::string> devices;  // rdma: device names ("rxe0", "mlx5_0")
  double connectTimeoutSeconds = 30;
  double opTimeoutSeconds = 30;                // a request to a silent peer fails after this
  std::map<std::string, std::string> options;  // backend-specific knobs
};

// Names of the backends compiled into this build, e.g. {"tcp","shm","rdma"}.
std::vector<std::string> compiledBackends();
// Why a known backend is missing from this build ("" if compiled).
std::string whyNotCompiled(const std::string& backend);
// Why a backend cannot run on this machine: not compiled, or the device it
// needs is missing (no RDMA device, no CUDA device). "" when it can run; then
// a failure to create it is a failure, never a reason to skip.
std::string whyCannotRunHere(const std::string& backend);

// Creates the backend and connects it to every peer through config.store.
Result<std::unique_ptr<Transport>> createTransport(const TransportConfig& config);

}  // namespace tide::transport
