#pragma once
// One opened RDMA device: context, protection domain, chosen port and GID.
// The GID is picked automatically (a RoCEv2 entry with an IPv4-mapped
// address first, then any RoCEv2, then index 0 for InfiniBand) unless the
// caller fixes it.

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/transport/rdma/verbs.h"

namespace tide::transport::rdma {

struct DeviceOptions {
  int port = 1;
  int gidIndex = -1;  // -1: pick automatically
};

class Device {
 public:
  // Opens `name` ("rxe0", "mlx5_0"). kNotFound names the devices that exist.
  static Result<std::unique_ptr<Device>> open(const std::string& name,
                                              const DeviceOptions& options);

  const std::string& name() const { return name_; }
  ibv_context* context() const { return context_.get(); }
  ibv_pd* pd() const { return pd_.get(); }
  uint8_t port() const { return port_; }
  int gidIndex() const { return gidIndex_; }
  const ibv_gid& gid() const { return gid_; }
  uint16_t lid() const { return lid_; }
  ibv_mtu activeMtu() const { return mtu_; }
  bool isEthernet() const { return linkLayer_ == IBV_LINK_LAYER_ETHERNET; }
  const ibv_device_attr& attr() const { return attr_; }
  // Dotted IPv4 address behind an IPv4-mapped RoCE GID, "" otherwise.
  std::string ipv4() const;

 private:
  Device() = default;

  std::string name_;
  Context context_;
  ProtectionDomain pd_;
  ibv_device_attr attr_{};
  uint8_t port_ = 1;
  int gidIndex_ = 0;
  ibv_gid gid_{};
  uint16_t lid_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  uint8_t linkLayer_ = IBV_LINK_LAYER_UNSPECIFIED;
};

// Names of the RDMA devices on this host (empty when none, e.g. no rdma in
// the kernel).
std::vector<std::string> listDevices();

// Message used whenever a test or tool finds no device.
inline constexpr const char* kNoDeviceHint = "no RDMA device (run via scripts/softroce.sh run)";

// "fe80::..." style text of a GID, for messages.
std::string gidToString(const ibv_gid& gid);

}  // namespace tide::transport::rdma
