#include "engine/exec/launch/rxe_cluster.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/log.h"
#include "engine/exec/launch/emulated_cluster.h"
#include "engine/exec/launch/host_lock.h"

namespace tide::exec {

namespace {

constexpr const char* kHostLock = "/run/tide-rxe-cluster.lock";

Result<UniqueFd> lockHost(double waitSeconds) {
  return lockHostFile(kHostLock, "rxe cluster", waitSeconds);
}

// Entry names of a /sys directory (empty when it does not exist).
std::vector<std::string> listDir(const char* path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path);
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

// "tr" + 4 hex digits + `kind` + (digits, or "r" for the bridge "br").
bool isOurs(const std::string& name, char kind) {
  if (name.size() < 8 || name.compare(0, 2, "tr") != 0) return false;
  for (size_t i = 2; i < 6; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::isupper(name[i])) return false;
  if (name[6] != kind) return false;
  const std::string rest = name.substr(7);
  if (kind == 'b' && rest == "r") return true;
  return !rest.empty() && std::all_of(rest.begin(), rest.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

Status writeSysctl(const std::string& dev, const std::string& key, const std::string& value) {
  const std::string path = "/proc/sys/net/ipv4/conf/" + dev + "/" + key;
  std::ofstream out(path);
  out << value << "\n";
  out.close();
  if (!out) return TIDE_ERROR(Code::kInternal, "cannot write " + value + " to " + path);
  return Status::ok();
}

// Runs `argv... FILE` with `lines` in FILE (ip -batch, tc -batch, rdma -b).
Status runBatch(std::vector<std::string> argv, const std::string& lines) {
  char path[] = "/tmp/tide-rxe-batch-XXXXXX";
  UniqueFd fd(::mkstemp(path));
  if (!fd.valid()) return TIDE_ERRNO("mkstemp");
  Status s = Status::ok();
  if (::write(fd.get(), lines.data(), lines.size()) != static_cast<ssize_t>(lines.size()))
    s = TIDE_ERRNO(std::string("write ") + path);
  if (s.isOk()) {
    argv.push_back(path);
    s = runTool(argv);
  }
  ::unlink(path);
  return s;
}

std::string readFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Waits until the rxe device's port is ACTIVE with a RoCEv2 GID for its IPv4
// address; both appear asynchronously after `rdma link add`.
Status waitActive(const std::string& dev, double seconds) {
  const std::string port = "/sys/class/infiniband/" + dev + "/ports/1/";
  Deadline deadline = Deadline::after(seconds);
  while (true) {
    if (readFirstLine(port + "state").find("ACTIVE") != std::string::npos) {
      for (const std::string& g : listDir((port + "gids").c_str())) {
        if (readFirstLine(port + "gids/" + g).rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0 &&
            readFirstLine(port + "gid_attrs/types/" + g) == "RoCE v2")
          return Status::ok();
      }
    }
    if (deadline.expired())
      return TIDE_ERROR(Code::kUnavailable, "rxe cluster: " + dev +
                                                " is not ACTIVE with an IPv4 RoCEv2 GID after " +
                                                std::to_string(static_cast<int>(seconds)) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

std::string rxeClusterMissing() {
  if (::geteuid() != 0)
    return "the rdma emulated cluster needs root (to create links, qdiscs and rxe devices)";
  if (::access("/sys/module/rdma_rxe", F_OK) != 0 && !runTool({"modprobe", "rdma_rxe"}).isOk())
    return "this kernel has no rdma_rxe (SoftRoCE); run it in the SoftRoCE guest: "
           "scripts/softroce.sh run -- tide sync ...";
  // Strict reverse-path filtering drops packets whose source is a local
  // address whatever the device says (effective value: max(all, device)).
  if (readFirstLine("/proc/sys/net/ipv4/conf/all/rp_filter") == "1")
    return "net.ipv4.conf.all.rp_filter is 1 (strict): it drops the cluster's packets, whose "
           "source addresses are local; set it to 0 or 2";
  return "";
}

std::string RxeCluster::nodeAddress(int node) {
  return "192.0.2." + std::to_string(10 + node);
}

std::string RxeCluster::deviceName(const std::string& prefix, int node) {
  return prefix + "r" + std::to_string(node);
}

Result<std::unique_ptr<RxeCluster>> RxeCluster::create(int nodes, double bytesPerSecond,
                                                       double waitSeconds) {
  TIDE_ASSIGN_OR_RETURN(
      ClusterClaim claim,
      claimHost("rxe cluster", kHostLock, nodes, kMaxNodes, bytesPerSecond, rxeClusterMissing(),
                Code::kFailedPrecondition, "tr", waitSeconds));
  std::unique_ptr<RxeCluster> c(new RxeCluster(claim.prefix, nodes));
  c->hostLock_ = std::move(claim.lock);
  Status s = c->build(bytesPerSecond);
  if (!s.isOk()) {
    (void)c->teardown();
    return s;
  }
  return c;
}

Status RxeCluster::build(double bytesPerSecond) {
  up_ = true;
  // HTB with a burst of ~2 ms of traffic, at least 16 KiB (a few packets:
  // rxe sends no GSO segments, and at the low rates a guest under emulation
  // can carry, a larger burst would be a visible share of a transfer). The
  // netdev MTU stays 1500 (rxe path MTU 1024): what a QP has queued in a
  // link is bounded in packets, so larger packets mean longer queues, and a
  // queue longer than the QP's ACK timeout means retransmissions. The
  // leaf queue is deep (at least 4 MiB, ~1 s at the rate): a full queue on
  // the tx side only makes rxe retry the send, but on the rx side (the
  // bridge port) it is a lost packet, which costs an RC retransmission
  // timeout. rxe bounds what it has in flight (skbs per QP, unacked PSNs),
  // so the queues stay far shorter than the limit.
  const double bits = bytesPerSecond * 8;
  const std::string burst =
      std::to_string(std::max<uint64_t>(16 * 1024, static_cast<uint64_t>(bytesPerSecond * 0.002)));
  const std::string queue =
      std::to_string(std::max<uint64_t>(4u << 20, static_cast<uint64_t>(bytesPerSecond)));
  const std::string rate = std::to_string(static_cast<uint64_t>(std::llround(bits))) + "bit";

  // One batch per tool: each exec costs tens of ms, far more in a guest
  // under emulation, and a cluster takes ~15 commands per node.
  const std::string br = prefix_ + "br";
  std::string links = "link add " + br + " type bridge\n", up, shaping, rxe;
  for (int i = 0; i < nodes_; ++i) {
    const std::string dev = prefix_ + "n" + std::to_string(i),
                      port = prefix_ + "b" + std::to_string(i);
    links += "link add " + dev + " type veth peer name " + port + "\n";
    links += "link set " + port + " master " + br + "\n";
    up += "addr add " + nodeAddress(i) + "/24 dev " + dev + "\n";
    up += "link set " + dev + " up\nlink set " + port + " up\n";
    for (const std::string& d : {dev, port}) {  // node tx, node rx
      shaping += "qdisc add dev " + d + " root handle 1: htb default 10\n";
      shaping += "class add dev " + d + " parent 1: classid 1:10 htb rate " + rate + " ceil " +
                 rate + " burst " + burst + " cburst " + burst + "\n";
      shaping += "qdisc add dev " + d + " parent 1:10 handle 10: bfifo limit " + queue + "\n";
    }
    rxe += "link add " + deviceName(prefix_, i) + " type rxe netdev " + dev + "\n";
  }
  up += "link set " + br + " up\n";
  // Recorded first: after a batch that failed midway, teardown removes
  // whatever of these exists (a veth takes its peer with it).
  links_.push_back(br);
  for (int i = 0; i < nodes_; ++i) links_.push_back(prefix_ + "n" + std::to_string(i));
  TIDE_RETURN_IF_ERROR(runBatch({"ip", "-batch"}, links));
  // The bridge device itself must never answer ARP: where local source
  // addresses are accepted (accept_local on "all", as the two-device guest
  // sets), it would answer for every node address with its own MAC, and
  // packets sent there reach no rxe device (measured: QPs retried until
  // "transport retry counter exceeded").
  TIDE_RETURN_IF_ERROR(writeSysctl(br, "arp_ignore", "8"));
  for (int i = 0; i < nodes_; ++i) {
    const std::string dev = prefix_ + "n" + std::to_string(i);
    TIDE_RETURN_IF_ERROR(writeSysctl(dev, "accept_local", "1"));
    TIDE_RETURN_IF_ERROR(writeSysctl(dev, "rp_filter", "0"));
    TIDE_RETURN_IF_ERROR(writeSysctl(dev, "arp_ignore", "1"));
    // A veth hands each packet to the input backlog of the CPU that sent
    // it; when HTB dequeues one QP's packets on two CPUs they can arrive out
    // of order, which rxe takes as loss (a NAK, a go-back-N resend, at worst
    // an ACK timeout: measured as a p2p step of 13.2 s instead of ~4 s).
    // Steering every end's input to CPU 0 (RPS) keeps each QP in order.
    for (const std::string& d : {dev, prefix_ + "b" + std::to_string(i)}) {
      const std::string path = "/sys/class/net/" + d + "/queues/rx-0/rps_cpus";
      std::ofstream out(path);
      out << "1\n";
      out.close();
      if (!out) return TIDE_ERROR(Code::kInternal, "cannot write 1 to " + path);
    }
  }
  TIDE_RETURN_IF_ERROR(runBatch({"ip", "-batch"}, up));
  TIDE_RETURN_IF_ERROR(runBatch({"tc", "-batch"}, shaping));
  for (int i = 0; i < nodes_; ++i) devices_.push_back(deviceName(prefix_, i));
  TIDE_RETURN_IF_ERROR(runBatch({"rdma", "-b"}, rxe));
  // A guest under emulation can take seconds per device.
  for (const std::string& d : devices_) TIDE_RETURN_IF_ERROR(waitActive(d, 30));
  return Status::ok();
}

int RxeCluster::ackTimeoutExponent(double bytesPerSecond, int queuePairs) {
  constexpr double kInFlightPerQp = 128 * 1024;  // rxe's unacked PSN window x path MTU 1024
  const double drain = std::max(1, queuePairs) * kInFlightPerQp / std::max(bytesPerSecond, 1.0);
  int t = 17;
  while (t < 31 && 4.096e-6 * std::ldexp(1.0, t) < 2 * drain) ++t;
  return t;
}

Result<RxeCluster::LinkBytes> RxeCluster::linkBytes(int node) const {
  if (!up_ || node < 0 || node >= nodes_)
    return TIDE_ERROR(Code::kInvalidArgument, "rxe cluster: no node " + std::to_string(node));
  auto counter = [](const std::string& dev) -> Result<uint64_t> {
    const std::string path = "/sys/class/net/" + dev + "/statistics/tx_bytes";
    std::ifstream in(path);
    uint64_t v = 0;
    if (!(in >> v)) return TIDE_ERROR(Code::kUnavailable, "cannot read " + path);
    return v;
  };
  LinkBytes b;
  TIDE_ASSIGN_OR_RETURN(b.tx, counter(prefix_ + "n" + std::to_string(node)));
  TIDE_ASSIGN_OR_RETURN(b.rx, counter(prefix_ + "b" + std::to_string(node)));
  return b;
}

Status RxeCluster::teardown() {
  if (!up_) return Status::ok();
  up_ = false;
  // Only what exists: a build that failed midway created part of it.
  std::string rxe, links;
  for (auto it = devices_.rbegin(); it != devices_.rend(); ++it)
    if (::access(("/sys/class/infiniband/" + *it).c_str(), F_OK) == 0)
      rxe += "link delete " + *it + "\n";
  for (auto it = links_.rbegin(); it != links_.rend(); ++it)
    if (::access(("/sys/class/net/" + *it).c_str(), F_OK) == 0) links += "link del " + *it + "\n";
  Status first = rxe.empty() ? Status::ok() : runBatch({"rdma", "-b"}, rxe);
  Status s = links.empty() ? Status::ok() : runBatch({"ip", "-force", "-batch"}, links);
  if (first.isOk()) first = s;
  devices_.clear();
  links_.clear();
  hostLock_.reset();
  return first;
}

RxeCluster::~RxeCluster() {
  (void)teardown();
}

Result<int> RxeCluster::cleanupAll() {
  if (::geteuid() != 0)
    return TIDE_ERROR(Code::kPermissionDenied, "removing an rxe cluster's leftovers needs root");
  // Whatever a live run holds is not a leftover.
  TIDE_ASSIGN_OR_RETURN(UniqueFd lock, lockHost(0));
  int removed = 0;
  for (const std::string& dev : listDir("/sys/class/infiniband")) {
    if (!isOurs(dev, 'r')) continue;
    TIDE_RETURN_IF_ERROR(runTool({"rdma", "link", "delete", dev}));
    ++removed;
  }
  for (const std::string& link : listDir("/sys/class/net")) {
    if (!isOurs(link, 'n') && !(isOurs(link, 'b') && link.substr(6) == "br")) continue;
    TIDE_RETURN_IF_ERROR(runTool({"ip", "link", "del", link}));
    ++removed;
  }
  return removed;
}

}  // namespace tide::exec
