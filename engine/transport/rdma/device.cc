#include "engine/transport/rdma/device.h"

#include <arpa/inet.h>

#include <cstring>

#include "engine/core/errno_status.h"
#include "engine/core/log.h"

namespace tide::transport::rdma {
namespace {

struct DeviceList {
  ibv_device** list = nullptr;
  int count = 0;
  DeviceList() { list = ibv_get_device_list(&count); }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
  ~DeviceList() {
    if (list != nullptr) ibv_free_device_list(list);
  }
};

bool isIpv4Mapped(const ibv_gid& gid) {
  static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, kPrefix, sizeof kPrefix) == 0;
}

bool isZero(const ibv_gid& gid) {
  static const ibv_gid kZero{};
  return std::memcmp(gid.raw, kZero.raw, sizeof gid.raw) == 0;
}

// Picks the GID: RoCEv2 + IPv4-mapped, else RoCEv2, else index 0.
Result<int> pickGid(ibv_context* ctx, uint8_t port, int tableLen, bool ethernet) {
  if (!ethernet) return 0;
  int anyV2 = -1;
  for (int i = 0; i < tableLen; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, port, i, &entry, 0) != 0) continue;  // empty slot
    ibv_gid gid;
    std::memcpy(gid.raw, entry.gid.raw, sizeof gid.raw);
    if (isZero(gid) || entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    if (isIpv4Mapped(gid)) return i;
    if (anyV2 < 0) anyV2 = i;
  }
  if (anyV2 >= 0) return anyV2;
  return TIDE_ERROR(Code::kUnavailable,
                    "no RoCEv2 GID on port " + std::to_string(port) +
                        " (does the netdev have an IP address?); set options gid_index");
}

}  // namespace

std::vector<std::string> listDevices() {
  DeviceList devs;
  std::vector<std::string> out;
  for (int i = 0; i < devs.count; ++i) out.emplace_back(ibv_get_device_name(devs.list[i]));
  return out;
}

std::string gidToString(const ibv_gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, buf, sizeof buf);
  return buf;
}

std::string Device::ipv4() const {
  if (!isIpv4Mapped(gid_)) return "";
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, gid_.raw + 12, buf, sizeof buf);
  return buf;
}

Result<std::unique_ptr<Device>> Device::open(const std::string& name,
                                             const DeviceOptions& options) {
  DeviceList devs;
  ibv_device* found = nullptr;
  std::string names;
  for (int i = 0; i < devs.count; ++i) {
    std::string n = ibv_get_device_name(devs.list[i]);
    if (n == name) found = devs.list[i];
    names += (names.empty() ? "" : ", ") + n;
  }
  if (found == nullptr)
    return TIDE_ERROR(Code::kNotFound,
                      "RDMA device '" + name + "' not found (" +
                          (names.empty() ? std::string(kNoDeviceHint) : "have: " + names) + ")");

  std::unique_ptr<Device> d(new Device());
  d->name_ = name;
  d->context_ = Context(ibv_open_device(found));
  if (!d->context_) return TIDE_ERRNO("ibv_open_device(" + name + ")");
  if (ibv_query_device(d->context(), &d->attr_) != 0)
    return TIDE_ERRNO("ibv_query_device(" + name + ")");
  if (options.port < 1 || options.port > d->attr_.phys_port_cnt)
    return TIDE_ERROR(Code::kInvalidArgument, name + " has no port " +
                                                  std::to_string(options.port) + " (ports 1.." +
                                                  std::to_string(d->attr_.phys_port_cnt) + ")");
  d->port_ = static_cast<uint8_t>(options.port);
  ibv_port_attr pattr{};
  if (ibv_query_port(d->context(), d->port_, &pattr) != 0)
    return TIDE_ERRNO("ibv_query_port(" + name + ")");
  if (pattr.state != IBV_PORT_ACTIVE)
    return TIDE_ERROR(Code::kUnavailable, name + " port " + std::to_string(options.port) +
                                              " is not active (state " +
                                              ibv_port_state_str(pattr.state) + ")");
  d->lid_ = pattr.lid;
  d->mtu_ = pattr.active_mtu;
  d->linkLayer_ = pattr.link_layer;
  if (options.gidIndex >= 0) {
    if (options.gidIndex >= pattr.gid_tbl_len)
      return TIDE_ERROR(Code::kInvalidArgument, "gid_index " + std::to_string(options.gidIndex) +
                                                    " beyond " + name + "'s table of " +
                                                    std::to_string(pattr.gid_tbl_len));
    d->gidIndex_ = options.gidIndex;
  } else {
    TIDE_ASSIGN_OR_RETURN(d->gidIndex_,
                          pickGid(d->context(), d->port_, pattr.gid_tbl_len, d->isEthernet()));
  }
  if (ibv_query_gid(d->context(), d->port_, d->gidIndex_, &d->gid_) != 0)
    return TIDE_ERRNO("ibv_query_gid(" + name + ")");
  d->pd_ = ProtectionDomain(ibv_alloc_pd(d->context()));
  if (!d->pd_) return TIDE_ERRNO("ibv_alloc_pd(" + name + ")");
  TIDE_LOG_INFO("rdma: opened {} port {} gid[{}]={} mtu={}", name, options.port, d->gidIndex_,
                gidToString(d->gid_), 128 << d->mtu_);
  return d;
}

}  // namespace tide::transport::rdma
