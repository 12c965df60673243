#include "engine/transport/rdma/rdma_transport.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <random>
#include <sstream>

#include "engine/core/errno_status.h"
#include "engine/core/log.h"
#include "engine/transport/rdma/device_memory.h"
#include "engine/transport/rdma/rdma_transport_impl.h"

namespace tide::transport::rdma {
namespace {

// A control-message wait checks this often whether the peer left.
constexpr double kRecvSliceSeconds = 0.1;

template <typename T>
Status parseNumber(const TransportConfig& c, const char* key, T& out, T lo, T hi) {
  auto it = c.options.find(key);
  if (it == c.options.end()) return Status::ok();
  const std::string& v = it->second;
  T x{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || x < lo || x > hi)
    return TIDE_ERROR(Code::kInvalidArgument, std::string("rdma option ") + key + "='" + v +
                                                  "' (expected " + std::to_string(lo) + ".." +
                                                  std::to_string(hi) + ")");
  out = x;
  return Status::ok();
}

std::vector<std::string> defaultDevices() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("TIDE_RDMA_DEVICES"); env != nullptr && *env != '\0') {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) out.push_back(item);
    return out;
  }
  auto all = listDevices();
  if (!all.empty()) out.push_back(all.front());
  return out;
}

// Adds $TIDE_RDMA_OPTIONS ("key=value,key=value") to `options` where a key
// is not set already: tools that build their own config (the transport
// bench) can then be tuned from outside. Unknown keys are refused, so a typo
// does not pass as a setting.
Status addEnvOptions(std::map<std::string, std::string>& options) {
  const char* env = std::getenv("TIDE_RDMA_OPTIONS");
  if (env == nullptr) return Status::ok();
  static const char* kKnown[] = {"port",      "gid_index",  "connect",    "poll",
                                 "sq_depth",  "max_inline", "qp_timeout", "retry_cnt",
                                 "slice_min", "slice_max",  "key_prefix"};
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (eq == std::string::npos || eq == 0)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "TIDE_RDMA_OPTIONS: '" + item + "' is not key=value");
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown))
      return TIDE_ERROR(Code::kInvalidArgument,
                        "TIDE_RDMA_OPTIONS: unknown rdma option '" + key + "'");
    options.emplace(key, item.substr(eq + 1));
  }
  return Status::ok();
}

}  // namespace

Result<RdmaOptions> parseRdmaOptions(const TransportConfig& config) {
  TransportConfig c = config;
  TIDE_RETURN_IF_ERROR(addEnvOptions(c.options));
  RdmaOptions o;
  TIDE_RETURN_IF_ERROR(parseNumber(c, "port", o.device.port, 1, 255));
  TIDE_RETURN_IF_ERROR(parseNumber(c, "gid_index", o.device.gidIndex, 0, 1023));
  if (auto it = c.options.find("connect"); it != c.options.end()) {
    if (it->second == "cm")
      o.useCm = true;
    else if (it->second != "store")
      return TIDE_ERROR(Code::kInvalidArgument,
                        "rdma option connect='" + it->second + "' (expected store or cm)");
  }
  if (auto it = c.options.find("poll"); it != c.options.end()) {
    TIDE_ASSIGN_OR_RETURN(o.poll, parsePollMode(it->second));
  }
  TIDE_RETURN_IF_ERROR(parseNumber(c, "sq_depth", o.qp.sqDepth, 4u, 16384u));
  TIDE_RETURN_IF_ERROR(parseNumber(c, "max_inline", o.qp.maxInline, 0u, 1024u));
  uint32_t timeout = o.qp.timeout, retry = o.qp.retryCnt;
  TIDE_RETURN_IF_ERROR(parseNumber(c, "qp_timeout", timeout, 1u, 31u));
  TIDE_RETURN_IF_ERROR(parseNumber(c, "retry_cnt", retry, 0u, 7u));
  o.qp.timeout = static_cast<uint8_t>(timeout);
  o.qp.retryCnt = static_cast<uint8_t>(retry);
  TIDE_RETURN_IF_ERROR(parseNumber(c, "slice_min", o.sliceMin, uint64_t{4096}, uint64_t{1} << 30));
  TIDE_RETURN_IF_ERROR(parseNumber(c, "slice_max", o.sliceMax, o.sliceMin, uint64_t{1} << 31));
  if (auto it = c.options.find("key_prefix"); it != c.options.end()) o.keyPrefix = it->second;
  if (c.streams < 1 || c.streams > 64)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "rdma streams=" + std::to_string(c.streams) + " (expected 1..64)");
  return o;
}

Result<std::unique_ptr<Transport>> createRdmaTransport(const TransportConfig& config) {
  TIDE_ASSIGN_OR_RETURN(auto t, RdmaTransport::create(config));
  return std::unique_ptr<Transport>(std::move(t));
}

RdmaStats rdmaStats(const Transport* transport) {
  auto* t = dynamic_cast<const RdmaTransport*>(transport);
  return t ? t->stats() : RdmaStats{};
}

Result<std::unique_ptr<RdmaTransport>> RdmaTransport::create(const TransportConfig& config) {
  std::unique_ptr<RdmaTransport> t(new RdmaTransport());
  TIDE_RETURN_IF_ERROR(t->init(config));
  return t;
}

Result<QueuePair> RdmaTransport::makeQp(int rail) {
  Rail& r = rails_[static_cast<size_t>(rail)];
  ibv_qp_init_attr a{};
  a.send_cq = r.sendCq.get();
  a.recv_cq = r.recvCq.get();
  a.qp_type = IBV_QPT_RC;
  a.sq_sig_all = 0;
  a.cap.max_send_wr = opts_.qp.sqDepth;
  a.cap.max_recv_wr = opts_.qp.rqDepth;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = opts_.qp.maxInline;
  QueuePair qp(ibv_create_qp(r.device->pd(), &a));
  if (!qp) return TIDE_ERRNO("ibv_create_qp on " + r.device->name());
  // The provider may round the inline size down; use what it granted.
  opts_.qp.maxInline = std::min(opts_.qp.maxInline, a.cap.max_inline_data);
  return qp;
}

Status RdmaTransport::init(const TransportConfig& config) {
  rank_ = config.rank;
  worldSize_ = config.worldSize;
  store_ = config.store;
  connectTimeout_ = config.connectTimeoutSeconds;
  opTimeout_ = config.opTimeoutSeconds;
  TIDE_ASSIGN_OR_RETURN(opts_, parseRdmaOptions(config));
  if (store_ == nullptr)
    return TIDE_ERROR(Code::kInvalidArgument, "rdma needs a rendezvous store (config.store)");
  registry_ = std::make_unique<RegionRegistry>(*store_, opts_.keyPrefix, rank_);
  mailbox_ = std::make_unique<StoreMailbox>(
      *store_, opts_.keyPrefix, rank_, worldSize_,
      [this](int peer) { return registry_->gone(peer); }, kRecvSliceSeconds);
  std::vector<std::string> names = config.devices.empty() ? defaultDevices() : config.devices;
  if (names.empty()) return TIDE_ERROR(Code::kUnavailable, kNoDeviceHint);
  if (names.size() > 16)
    return TIDE_ERROR(Code::kInvalidArgument, "more than 16 RDMA devices listed");

  size_t channelsPerRail = static_cast<size_t>((worldSize_ + 1) * config.streams);
  for (const auto& name : names) {
    Rail r;
    TIDE_ASSIGN_OR_RETURN(r.device, Device::open(name, opts_.device));
    int maxCqe = r.device->attr().max_cqe;
    int sendCqe = static_cast<int>(channelsPerRail * opts_.qp.sqDepth);
    int recvCqe = static_cast<int>(channelsPerRail * opts_.qp.rqDepth);
    if (sendCqe > maxCqe || recvCqe > maxCqe)
      return TIDE_ERROR(Code::kResourceExhausted,
                        name + " CQs hold " + std::to_string(maxCqe) + " entries; " +
                            std::to_string(channelsPerRail) + " QPs x sq_depth " +
                            std::to_string(opts_.qp.sqDepth) + " need more: lower sq_depth");
    ibv_comp_channel* ev = nullptr;
    if (opts_.poll == PollMode::kEvent) {
      r.events = CompletionChannel(ibv_create_comp_channel(r.device->context()));
      if (!r.events) return TIDE_ERRNO("ibv_create_comp_channel on " + name);
      TIDE_RETURN_IF_ERROR(makeNonBlocking(r.events.get()));
      ev = r.events.get();
    }
    r.sendCq = CompletionQueue(ibv_create_cq(r.device->context(), sendCqe, nullptr, ev, 0));
    r.recvCq = CompletionQueue(ibv_create_cq(r.device->context(), recvCqe, nullptr, ev, 0));
    if (!r.sendCq || !r.recvCq) return TIDE_ERRNO("ibv_create_cq on " + name);
    rails_.push_back(std::move(r));
  }

  plan_.rank = rank_;
  plan_.worldSize = worldSize_;
  plan_.streams = config.streams;
  for (auto& r : rails_) plan_.devices.push_back(r.device.get());
  plan_.params = opts_.qp;
  plan_.timeoutSeconds = connectTimeout_;
  plan_.keyPrefix = opts_.keyPrefix;
  plan_.makeQp = [this](int rail) { return makeQp(rail); };

  if (opts_.useCm) {
    TIDE_ASSIGN_OR_RETURN(channels_, createChannels(plan_));
    TIDE_RETURN_IF_ERROR(connectSelf(plan_, channels_));
    TIDE_ASSIGN_OR_RETURN(cm_, CmConnection::connect(plan_, *store_, channels_));
  } else {
    TIDE_ASSIGN_OR_RETURN(channels_, connectViaStore(plan_, *store_));
  }
  plan_.params.maxInline = opts_.qp.maxInline;

  senders_.assign(static_cast<size_t>(worldSize_), {});
  rr_.assign(static_cast<size_t>(worldSize_), 0);
  for (size_t i = 0; i < channels_.size(); ++i) {
    Channel& ch = channels_[i];
    channelByQpn_[{ch.rail, ch.qp->qp_num}] = i;
    if (ch.sender) senders_[static_cast<size_t>(ch.peer)].push_back(i);
    TIDE_RETURN_IF_ERROR(postReceives(ch, i, opts_.qp.rqDepth));
  }
  // Receives must be posted before any peer may WRITE_WITH_IMM to us.
  TIDE_RETURN_IF_ERROR(
      storeBarrier(*store_, opts_.keyPrefix + "receives-posted", worldSize_, connectTimeout_));
  stats_.queuePairs = channels_.size();
  stats_.devices = static_cast<int>(rails_.size());
  stats_.bytesPerDevice.assign(rails_.size(), 0);
  progressThread_ = std::thread([this] { progressLoop(); });
  return Status::ok();
}

RdmaTransport::~RdmaTransport() {
  // Peers that see errors from now on learn that this rank left on purpose.
  if (registry_ && !channels_.empty()) (void)registry_->markGone();
  if (progressThread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    progressThread_.join();
  }
  // Stop every QP, then drain so no work request still targets user memory.
  for (auto& ch : channels_) {
    if (ch.broken || !ch.qp) continue;
    ch.broken = true;
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    (void)ibv_modify_qp(ch.qp.get(), &attr, IBV_QP_STATE);
  }
  Deadline d = Deadline::after(2.0);
  auto pending = [this] {
    for (auto& ch : channels_)
      if (!ch.inFlight.empty()) return true;
    return false;
  };
  while (pending() && !d.expired()) {
    for (size_t rail = 0; rail < rails_.size(); ++rail) {
      ibv_wc wc[32];
      int n = ibv_poll_cq(rails_[rail].sendCq.get(), 32, wc);
      for (int i = 0; i < n; ++i) {
        auto it = channelByQpn_.find({static_cast<int>(rail), wc[i].qp_num});
        if (it == channelByQpn_.end()) continue;
        auto& q = channels_[it->second].inFlight;
        while (!q.empty() && q.front().seq <= wc[i].wr_id) q.pop_front();
      }
    }
  }
}

Capabilities RdmaTransport::capabilities() const {
  Capabilities c;
  c.backend = "rdma";
  c.oneSided = true;
  c.read = true;
  c.writeWithImm = true;
  c.crossHost = true;
  c.deviceMemory = deviceMemorySupported();
  c.devices = static_cast<uint32_t>(rails_.size());
  uint64_t maxMr = UINT64_MAX;
  for (const auto& r : rails_) maxMr = std::min<uint64_t>(maxMr, r.device->attr().max_mr_size);
  c.maxRegionBytes = maxMr;
  return c;
}

Result<LocalRegion> RdmaTransport::registerRegion(void* addr, uint64_t size, MemoryKind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  if (addr == nullptr || size == 0)
    return TIDE_ERROR(Code::kInvalidArgument, "cannot register an empty region");
  Region reg;
  Stopwatch sw;
  for (auto& r : rails_) {
    if (kind == MemoryKind::kCuda) {
      TIDE_ASSIGN_OR_RETURN(MemoryRegion mr,
                            registerDeviceMemory(r.device->pd(), addr, size, kRemoteAccess));
      reg.mrs.push_back(std::move(mr));
      continue;
    }
    MemoryRegion mr(ibv_reg_mr(r.device->pd(), addr, size, kRemoteAccess));
    if (!mr) {
      Status s =
          TIDE_ERRNO("ibv_reg_mr(" + std::to_string(size) + " bytes) on " + r.device->name());
      if (errno == ENOMEM || errno == EPERM || errno == EFAULT)
        s = s.withContext("cannot pin memory (check `ulimit -l`)");
      return s;
    }
    reg.mrs.push_back(std::move(mr));
  }
  double secs = sw.seconds();
  static thread_local std::mt19937_64 gen(std::random_device{}());
  uint32_t id = nextRegionId_++;
  reg.info.id = id;
  reg.info.addr = addr;
  reg.info.size = size;
  reg.info.kind = kind;
  RemoteRegion& d = reg.info.descriptor;
  d.rank = rank_;
  d.id = id;
  d.size = size;
  d.base = reinterpret_cast<uint64_t>(addr);
  d.key = gen();
  for (auto& mr : reg.mrs) d.rkeys.push_back(mr->rkey);
  TIDE_RETURN_IF_ERROR(
      registry_->publish(d).withContext("publishing region " + std::to_string(id)));
  stats_.lastRegistrationSeconds = secs;
  stats_.totalRegistrationSeconds += secs;
  stats_.registeredBytes += size;
  ++stats_.regionsRegistered;
  TIDE_LOG_INFO("rdma: registered region {} ({} bytes) on {} device(s) in {:.6f} s ({:.2f} GB/s)",
                id, size, rails_.size(), secs, secs > 0 ? size / secs / 1e9 : 0.0);
  LocalRegion out = reg.info;
  regions_.emplace(id, std::move(reg));
  return out;
}

Status RdmaTransport::deregisterRegion(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(id);
  if (it == regions_.end())
    return TIDE_ERROR(Code::kNotFound, "no registered region " + std::to_string(id));
  if (it->second.inUse > 0)
    return TIDE_ERROR(Code::kFailedPrecondition, "region " + std::to_string(id) + " is used by " +
                                                     std::to_string(it->second.inUse) +
                                                     " unfinished request slices");
  // Peers re-check the region before their next request to it.
  if (Status s = registry_->retract(id); !s.isOk())
    TIDE_LOG_WARN(
        "rdma: cannot mark region {} deregistered in the store ({}); peers that still "
        "write to it will see a remote access error",
        id, s.message());
  stats_.registeredBytes -= it->second.info.size;
  regions_.erase(it);
  return Status::ok();
}

Status RdmaTransport::importRegion(const RemoteRegion& remote) {
  if (remote.rank < 0 || remote.rank >= worldSize_)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "region descriptor names rank " + std::to_string(remote.rank) +
                          " outside world of " + std::to_string(worldSize_));
  if (remote.rkeys.size() != rails_.size())
    return TIDE_ERROR(Code::kInvalidArgument,
                      "region descriptor carries " + std::to_string(remote.rkeys.size()) +
                          " rkeys, this transport has " + std::to_string(rails_.size()) +
                          " RDMA device(s) (not an rdma descriptor, or a different device count)");
  if (remote.base + remote.size < remote.base)
    return TIDE_ERROR(Code::kInvalidArgument, "region descriptor wraps the address space");
  // A descriptor that does not match its owner's registration is kept with
  // its verdict: requests against it fail at submit, before anything is posted.
  Imported imp{remote, {}};
  if (remote.rank != rank_) {
    TIDE_ASSIGN_OR_RETURN(imp.verdict, verifyRegion(remote));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (remote.rank == rank_) {
    TIDE_ASSIGN_OR_RETURN(imp.verdict, verifyRegion(remote));
  }
  remotes_[{remote.rank, remote.id}] = std::move(imp);
  return Status::ok();
}

Result<RegionVerdict> RdmaTransport::verifyRegion(const RemoteRegion& d) {
  if (d.rank != rank_) return registry_->verify(d, connectTimeout_);
  // This rank's own regions: the local table is the truth (mu_ held).
  auto it = regions_.find(d.id);
  if (it == regions_.end()) {
    RegionVerdict v;
    v.status = TIDE_ERROR(Code::kNotFound, "region " + std::to_string(d.id) + " of rank " +
                                               std::to_string(d.rank) +
                                               " is not registered (never, or deregistered)");
    return v;
  }
  return RegionRegistry::compare(d, it->second.info.descriptor);
}

Status RdmaTransport::refreshImported(Imported& imp, int64_t ownerEpoch) {
  bool self = imp.desc.rank == rank_;
  if (!self && imp.verdict.status.isOk() && imp.verdict.epoch == ownerEpoch) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(imp.verdict, verifyRegion(imp.desc));
  return Status::ok();
}

Status RdmaTransport::send(int peer, uint32_t tag, std::span<const uint8_t> bytes) {
  return mailbox_->send(peer, tag, bytes);
}

Result<std::vector<uint8_t>> RdmaTransport::recv(int peer, uint32_t tag, double timeoutSeconds) {
  return mailbox_->recv(peer, tag, timeoutSeconds);
}

}  // namespace tide::transport::rdma
