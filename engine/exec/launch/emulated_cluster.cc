#include "engine/exec/launch/emulated_cluster.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/fd.h"
#include "engine/core/log.h"
#include "engine/core/parse.h"
#include "engine/exec/launch/host_lock.h"

namespace tide::exec {

namespace {

// Runs argv, capturing stdout and stderr together.
Result<std::string> capture(const std::vector<std::string>& argv, int* exitCode) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return TIDE_ERRNO("pipe2");
  UniqueFd readEnd(fds[0]), writeEnd(fds[1]);
  pid_t pid = fork();
  if (pid < 0) return TIDE_ERRNO("fork");
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  writeEnd = UniqueFd();
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(readEnd.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  *exitCode = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return out;
}

constexpr const char* kHostLock = "/run/tide-emulated-cluster.lock";

Result<UniqueFd> lockHost(double waitSeconds) {
  return lockHostFile(kHostLock, "emulated cluster", waitSeconds);
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

Status runTool(const std::vector<std::string>& argv) {
  int code = 0;
  TIDE_ASSIGN_OR_RETURN(std::string out, capture(argv, &code));
  if (code == 0) return Status::ok();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (code == 127) out = "not found (install iproute2)";
  return TIDE_ERROR(Code::kInternal,
                    "'" + joined(argv) + "' failed (" + std::to_string(code) + "): " + out);
}

std::string netAdminMissing() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    std::string_view field(line);
    field.remove_prefix(7);
    while (!field.empty() && (field.front() == ' ' || field.front() == '\t'))
      field.remove_prefix(1);
    auto parsed = parseUnsigned(field, "CapEff", 16);
    if (!parsed.isOk()) break;
    const uint64_t caps = *parsed;
    constexpr int kCapNetAdmin = 12, kCapSysAdmin = 21;
    if (!(caps & (1ull << kCapNetAdmin)) || !(caps & (1ull << kCapSysAdmin))) {
      return "the emulated cluster needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create "
             "network namespaces)";
    }
    return "";
  }
  return "cannot read the process capabilities from /proc/self/status";
}

std::string EmulatedCluster::nicAddress(int node, int nic, int nicsPerNode) {
  return "198.51.100." + std::to_string(10 + node * nicsPerNode + nic);
}

std::string EmulatedCluster::nicDevice(int node, int nic) const {
  // One NIC: the names of the clusters before NICs were emulated.
  return prefix_ + "n" + std::to_string(node) + (nics_ > 1 ? "x" + std::to_string(nic) : "");
}

std::string EmulatedCluster::nodeNamespace(const std::string& prefix, int node) {
  return prefix + "-n" + std::to_string(node);
}

Result<std::unique_ptr<EmulatedCluster>> EmulatedCluster::create(int nodes, double bytesPerSecond,
                                                                 EmulatedFabric fabric,
                                                                 double waitSeconds) {
  if (fabric.nodesPerLeaf < 0 ||
      (fabric.nodesPerLeaf > 0 && !(fabric.leafUplinkBytesPerSecond > 0))) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "emulated cluster: a leaf needs >= 1 node and an uplink rate > 0");
  }
  // The addresses: 198.51.100.10 up to .254, one per NIC.
  if (fabric.nicsPerNode < 1 || nodes * fabric.nicsPerNode > 245) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "emulated cluster: " + std::to_string(nodes) + " nodes x " +
                          std::to_string(fabric.nicsPerNode) +
                          " NICs: at most 245 NICs in all (one address of 198.51.100.0/24 each)");
  }
  TIDE_ASSIGN_OR_RETURN(ClusterClaim claim,
                        claimHost("emulated cluster", kHostLock, nodes, kMaxNodes, bytesPerSecond,
                                  netAdminMissing(), Code::kPermissionDenied, "td", waitSeconds));
  std::unique_ptr<EmulatedCluster> c(new EmulatedCluster(claim.prefix, nodes, fabric.nicsPerNode));
  c->hostLock_ = std::move(claim.lock);
  Status s = c->build(bytesPerSecond, fabric);
  if (!s.isOk()) {
    (void)c->teardown();
    return s;
  }
  return c;
}

Status EmulatedCluster::build(double bytesPerSecond, const EmulatedFabric& fabric) {
  up_ = true;
  const std::string br = hubNamespace();
  TIDE_RETURN_IF_ERROR(runTool({"ip", "netns", "add", br}));
  namespaces_.push_back(br);
  TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", br, "link", "add", "br0", "type", "bridge"}));
  TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", br, "link", "set", "br0", "up"}));
  // The hub: the bridge's own address, where the launcher hosts the
  // rendezvous store from inside this namespace (NamespaceScope). Nothing of
  // the cluster is in the host's namespace, so the host's own addresses,
  // routes and firewall cannot take the cluster's traffic.
  TIDE_RETURN_IF_ERROR(
      runTool({"ip", "-n", br, "addr", "add", hubAddress() + "/24", "dev", "br0"}));
  // The launcher's own connections to the store go to a local address: lo.
  TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", br, "link", "set", "lo", "up"}));

  // HTB: the rate in bit/s; a burst of ~2 ms of traffic (at least 64 KiB, one
  // GSO segment) keeps short-term overshoot small without starving TCP.
  auto burstOf = [](double bps) {
    return std::max<uint64_t>(64 * 1024, static_cast<uint64_t>(bps * 0.002));
  };
  bitsPerSecond_ = bytesPerSecond * 8;
  burstBytes_ = burstOf(bytesPerSecond);
  // The data queue is bounded in bytes (~50 ms at the rate, at least four
  // 64 KiB GSO segments): HTB's default leaf is a 1000-packet FIFO, which with
  // GSO segments holds seconds of data. Pure ACKs (TCP packets under 128
  // bytes) skip it: a class of their own, served first, in the link's rate.
  // A switch port queues a node's ACKs behind its data for microseconds;
  // behind the 50 ms of this queue, a node that receives at line rate sends
  // slower (measured: a relay forwarding at 82 % of its link's rate).
  auto shape = [&](const std::string& ns, const std::string& dev, double bps) -> Status {
    const uint64_t queue = std::max<uint64_t>(256 * 1024, static_cast<uint64_t>(bps * 0.05));
    TIDE_RETURN_IF_ERROR(runTool({"tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle",
                                  "1:", "htb", "default", "10"}));
    for (auto& c : linkClasses(ns, dev, bps * 8, burstOf(bps), "add"))
      TIDE_RETURN_IF_ERROR(runTool(c));
    TIDE_RETURN_IF_ERROR(runTool({"tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:10",
                                  "handle", "10:", "bfifo", "limit", std::to_string(queue)}));
    TIDE_RETURN_IF_ERROR(runTool({"tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:11",
                                  "handle", "11:", "pfifo", "limit", "1000"}));
    return runTool({"tc",     "-n",     ns,         "filter", "add",    "dev",   dev,
                    "parent", "1:",     "protocol", "ip",     "prio",   "2",     "u32",
                    "match",  "ip",     "protocol", "6",      "0xff",   "match", "u16",
                    "0x0000", "0xff80", "at",       "2",      "flowid", "1:11"});
  };
  // Leaves: a bridge each beside the spine's, joined to it by a veth pair
  // shaped both ways (its leaf end sends up, its spine end sends down).
  const int leafCount =
      fabric.nodesPerLeaf > 0 ? (nodes_ + fabric.nodesPerLeaf - 1) / fabric.nodesPerLeaf : 0;
  for (int l = 0; l < leafCount; ++l) {
    const std::string lb = "leaf" + std::to_string(l), up = prefix_ + "u" + std::to_string(l),
                      down = prefix_ + "s" + std::to_string(l);
    TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", br, "link", "add", lb, "type", "bridge"}));
    TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", br, "link", "set", lb, "up"}));
    TIDE_RETURN_IF_ERROR(
        runTool({"ip", "-n", br, "link", "add", up, "type", "veth", "peer", "name", down}));
    TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", br, "link", "set", up, "master", lb, "up"}));
    TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", br, "link", "set", down, "master", "br0", "up"}));
    TIDE_RETURN_IF_ERROR(shape(br, up, fabric.leafUplinkBytesPerSecond));
    TIDE_RETURN_IF_ERROR(shape(br, down, fabric.leafUplinkBytesPerSecond));
  }
  for (int i = 0; i < nodes_; ++i) {
    const std::string ns = nodeNamespace(prefix_, i);
    TIDE_RETURN_IF_ERROR(runTool({"ip", "netns", "add", ns}));
    namespaces_.push_back(ns);
    TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", ns, "link", "set", "lo", "up"}));
    const std::string bridge =
        leafCount > 0 ? "leaf" + std::to_string(i / fabric.nodesPerLeaf) : "br0";
    if (nics_ > 1) {
      // Several links on one subnet: each answers ARP only for its own
      // address, and no reply leaves by another NIC than it came in by.
      TIDE_RETURN_IF_ERROR(runTool(
          {"ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.conf.all.arp_ignore=1",
           "net.ipv4.conf.all.arp_announce=2", "net.ipv4.conf.all.rp_filter=0"}));
    }
    for (int k = 0; k < nics_; ++k) {
      const std::string dev = nicDevice(i, k), peer = linkEnds(i)[2 * k + 1].second,
                        addr = nicAddress(i, k, nics_);
      TIDE_RETURN_IF_ERROR(
          runTool({"ip", "link", "add", dev, "type", "veth", "peer", "name", peer}));
      TIDE_RETURN_IF_ERROR(runTool({"ip", "link", "set", dev, "netns", ns}));
      TIDE_RETURN_IF_ERROR(runTool({"ip", "link", "set", peer, "netns", br}));
      TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", ns, "addr", "add", addr + "/24", "dev", dev}));
      TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", ns, "link", "set", dev, "up"}));
      TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", br, "link", "set", peer, "master", bridge, "up"}));
      TIDE_RETURN_IF_ERROR(shape(ns, dev, bytesPerSecond));   // NIC tx
      TIDE_RETURN_IF_ERROR(shape(br, peer, bytesPerSecond));  // NIC rx
      if (nics_ > 1) {
        // Source routing: what a rank sends from this NIC's address leaves
        // through this NIC.
        const std::string table = std::to_string(100 + k);
        TIDE_RETURN_IF_ERROR(
            runTool({"ip", "-n", ns, "rule", "add", "from", addr, "table", table}));
        TIDE_RETURN_IF_ERROR(runTool({"ip", "-n", ns, "route", "add", "198.51.100.0/24", "dev", dev,
                                      "src", addr, "table", table}));
      }
    }
  }
  return Status::ok();
}

std::vector<std::pair<std::string, std::string>> EmulatedCluster::linkEnds(int node) const {
  std::vector<std::pair<std::string, std::string>> ends;
  for (int k = 0; k < nics_; ++k) {
    std::string dev = nicDevice(node, k), peer = dev;
    peer[prefix_.size()] = 'b';
    ends.emplace_back(nodeNamespace(prefix_, node), std::move(dev));
    ends.emplace_back(hubNamespace(), std::move(peer));
  }
  return ends;
}

std::vector<std::vector<std::string>> EmulatedCluster::linkClasses(const std::string& ns,
                                                                   const std::string& dev,
                                                                   double bitsPerSecond,
                                                                   uint64_t burstBytes,
                                                                   const std::string& verb) {
  auto bits = [](double b) {
    return std::to_string(std::max<uint64_t>(8, static_cast<uint64_t>(std::llround(b)))) + "bit";
  };
  const std::string ceil = bits(bitsPerSecond), burst = std::to_string(burstBytes);
  // 1:1 the link; under it 1:10 data and 1:11 ACKs (prio 0: first), each
  // up to the link's whole rate.
  std::vector<std::vector<std::string>> out;
  for (const auto& [id, parent, share, prio] :
       {std::tuple<const char*, const char*, double, const char*>{"1:1", "1:", 1.0, nullptr},
        {"1:10", "1:1", 0.99, "1"},
        {"1:11", "1:1", 0.01, "0"}}) {
    std::vector<std::string> c{
        "tc",     "-n",   ns,        "class", verb,     "dev",  dev,
        "parent", parent, "classid", id,      "htb",    "rate", bits(bitsPerSecond * share),
        "ceil",   ceil,   "burst",   burst,   "cburst", burst};
    if (prio) c.insert(c.end(), {"prio", prio});
    out.push_back(std::move(c));
  }
  return out;
}

Status EmulatedCluster::setRate(const std::string& ns, const std::string& dev,
                                double bitsPerSecond) const {
  for (auto& c : linkClasses(ns, dev, bitsPerSecond, burstBytes_, "change"))
    TIDE_RETURN_IF_ERROR(runTool(c));
  return Status::ok();
}

Status EmulatedCluster::impairLink(int node, double lossPercent, double rateFraction) {
  if (!up_ || node < 0 || node >= nodes_) {
    return TIDE_ERROR(Code::kInvalidArgument, "emulated cluster: no node " + std::to_string(node));
  }
  if (!(lossPercent >= 0 && lossPercent <= 100) || !(rateFraction > 0 && rateFraction <= 1)) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "emulated cluster: loss must be in [0, 100] %, the rate fraction in (0, 1]");
  }
  // A packet whose random number (classic BPF's ancillary load at
  // SKF_AD_OFF + SKF_AD_RANDOM) is below the threshold matches and goes to
  // class 1:20, whose one-byte FIFO drops it:
  //   ld rand; jge #threshold -> no match; ret -1 (match); ret 0.
  const uint64_t threshold =
      std::min<uint64_t>(0xffffffffull, static_cast<uint64_t>(lossPercent / 100 * 4294967296.0));
  const std::string program =
      "4,32 0 0 4294963256,53 1 0 " + std::to_string(threshold) + ",6 0 0 4294967295,6 0 0 0";
  for (const auto& [ns, dev] : linkEnds(node)) {
    TIDE_RETURN_IF_ERROR(runTool({"tc", "-n", ns, "class", "add", "dev", dev, "parent",
                                  "1:", "classid", "1:20", "htb", "rate", "8bit", "ceil", "8bit"}));
    TIDE_RETURN_IF_ERROR(runTool({"tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:20",
                                  "handle", "20:", "bfifo", "limit", "1"}));
    TIDE_RETURN_IF_ERROR(
        runTool({"tc", "-n", ns, "filter", "add", "dev", dev, "parent", "1:", "protocol", "all",
                 "prio", "1", "bpf", "bytecode", program, "classid", "1:20"}));
    TIDE_RETURN_IF_ERROR(setRate(ns, dev, bitsPerSecond_ * rateFraction));
  }
  return Status::ok();
}

Status EmulatedCluster::restoreLink(int node) {
  if (!up_ || node < 0 || node >= nodes_) {
    return TIDE_ERROR(Code::kInvalidArgument, "emulated cluster: no node " + std::to_string(node));
  }
  // Every step is tried, so a half-impaired link (impairLink failed midway)
  // is undone as far as it went; the rate decides the result.
  Status first = Status::ok();
  for (const auto& [ns, dev] : linkEnds(node)) {
    (void)runTool({"tc", "-n", ns, "filter", "del", "dev", dev, "parent", "1:", "prio", "1"});
    (void)runTool({"tc", "-n", ns, "class", "del", "dev", dev, "parent", "1:", "classid", "1:20"});
    Status s = setRate(ns, dev, bitsPerSecond_);
    if (!s.isOk() && first.isOk()) first = s;
  }
  return first;
}

Status EmulatedCluster::teardown() {
  if (!up_) return Status::ok();
  up_ = false;
  Status first = Status::ok();
  // Deleting a namespace deletes the veth ends in it, and so their peers.
  for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
    Status s = runTool({"ip", "netns", "del", *it});
    if (!s.isOk() && first.isOk()) first = s;
  }
  namespaces_.clear();
  hostLock_.reset();
  return first;
}

EmulatedCluster::~EmulatedCluster() {
  (void)teardown();
}

Result<int> EmulatedCluster::cleanupAll() {
  if (std::string why = netAdminMissing(); !why.empty()) {
    return TIDE_ERROR(Code::kPermissionDenied, why);
  }
  // Whatever a live run holds is not a leftover.
  TIDE_ASSIGN_OR_RETURN(UniqueFd lock, lockHost(0));
  int removed = 0, code = 0;
  const std::regex nsName("^td[0-9a-f]{4}-(br|n[0-9]+)$");
  TIDE_ASSIGN_OR_RETURN(std::string list, capture({"ip", "netns", "list"}, &code));
  std::istringstream in(list);
  std::string line;
  while (std::getline(in, line)) {
    const std::string name = line.substr(0, line.find(' '));
    if (!std::regex_match(name, nsName)) continue;
    TIDE_RETURN_IF_ERROR(runTool({"ip", "netns", "del", name}));
    ++removed;
  }
  return removed;
}

}  // namespace tide::exec
