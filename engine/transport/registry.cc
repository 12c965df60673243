#include "engine/transport/registry.h"

#ifdef TIDE_HAVE_TCP
#include "engine/transport/tcp/tcp_transport.h"
#endif
#ifdef TIDE_HAVE_SHM
#include "engine/transport/shm/shm_transport.h"
#endif
#ifdef TIDE_HAVE_RDMA
#include "engine/transport/rdma/device.h"
#include "engine/transport/rdma/rdma_transport.h"
#endif
#ifdef TIDE_HAVE_NCCL
#include "engine/transport/nccl/nccl_handles.h"
#include "engine/transport/nccl/nccl_transport.h"
#endif

namespace tide::transport {

std::vector<std::string> compiledBackends() {
  std::vector<std::string> out;
#ifdef TIDE_HAVE_TCP
  out.push_back("tcp");
#endif
#ifdef TIDE_HAVE_SHM
  out.push_back("shm");
#endif
#ifdef TIDE_HAVE_RDMA
  out.push_back("rdma");
#endif
#ifdef TIDE_HAVE_NCCL
  out.push_back("nccl");
#endif
  return out;
}

std::string whyNotCompiled(const std::string& backend) {
  for (const auto& b : compiledBackends())
    if (b == backend) return "";
  if (backend == "rdma") return "built without libibverbs/librdmacm (TIDE_WITH_RDMA)";
  if (backend == "nccl") return "built without CUDA and NCCL (TIDE_WITH_NCCL)";
  if (backend == "tcp" || backend == "shm")
    return "disabled at configure time (TIDE_WITH_" +
           std::string(backend == "tcp" ? "TCP" : "SHM") + "=OFF)";
  return "unknown backend '" + backend + "' (known: tcp, shm, rdma, nccl)";
}

std::string whyCannotRunHere(const std::string& backend) {
  std::string why = whyNotCompiled(backend);
  if (!why.empty()) return why;
#ifdef TIDE_HAVE_RDMA
  if (backend == "rdma" && rdma::listDevices().empty())
    return "no RDMA device (ibv_get_device_list found none; see docs/softroce.md)";
#endif
#ifdef TIDE_HAVE_NCCL
  if (backend == "nccl" && gpu::deviceCount() == 0) return "no CUDA device";
#endif
  return "";
}

Result<std::unique_ptr<Transport>> createTransport(const TransportConfig& config) {
  if (config.store == nullptr)
    return TIDE_ERROR(Code::kInvalidArgument, "transport config has no rendezvous store");
  if (config.worldSize < 1 || config.rank < 0 || config.rank >= config.worldSize)
    return TIDE_ERROR(Code::kInvalidArgument, "rank " + std::to_string(config.rank) +
                                                  " outside world of " +
                                                  std::to_string(config.worldSize));
#ifdef TIDE_HAVE_TCP
  if (config.backend == "tcp") return tcp::createTcpTransport(config);
#endif
#ifdef TIDE_HAVE_SHM
  if (config.backend == "shm") return shm::createShmTransport(config);
#endif
#ifdef TIDE_HAVE_RDMA
  if (config.backend == "rdma") return rdma::createRdmaTransport(config);
#endif
#ifdef TIDE_HAVE_NCCL
  if (config.backend == "nccl") return nccl::createNcclTransport(config);
#endif
  return TIDE_ERROR(Code::kUnimplemented, "transport '" + config.backend +
                                              "' unavailable: " + whyNotCompiled(config.backend));
}

}  // namespace tide::transport
