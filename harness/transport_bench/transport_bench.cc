#include "harness/transport_bench/transport_bench.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/kv_store.h"
#include "engine/core/log.h"
#include "engine/core/units.h"
#include "engine/exec/rendezvous/rank_env.h"
#include "engine/transport/registration.h"
#include "engine/transport/registry.h"
#include "harness/transport_bench/iperf_reference.h"

namespace tide::harness {
namespace {

using transport::Op;
using transport::Request;
using transport::Transport;

constexpr uint32_t kTag = 0x7b01;
constexpr double kControlTimeout = 600;  // rank 1 waits for rank 0's next step

// Page-aligned buffer of bytes, first-touched by its owner.
struct Buffer {
  explicit Buffer(uint64_t n) : size(n) {
    void* p = nullptr;
    if (::posix_memalign(&p, 4096, std::max<uint64_t>(n, 1)) == 0)
      data.reset(static_cast<char*>(p));
  }
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data;
  uint64_t size;
};

void fillPattern(char* p, uint64_t n, uint64_t seed) {
  uint64_t x = seed;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {  // splitmix64: cheap, and no two blocks alike
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(p + i, &z, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<char>(i);
}

Status sendByte(Transport& t, int peer, uint8_t b) {
  return t.send(peer, kTag, std::span<const uint8_t>(&b, 1));
}

// Rank 1: exposes its buffer, then answers rank 0's commands:
// 'H' hash the buffer, 'Q' quit.
Status rankOne(Transport& t, uint64_t bytes) {
  // From the transport: shm peers in other processes then map it once.
  TIDE_ASSIGN_OR_RETURN(auto memory, t.allocateHost(bytes));
  std::memset(memory.data(), 0, bytes);
  // Deregistered before the memory goes, on every return.
  TIDE_ASSIGN_OR_RETURN(auto dst, transport::Registration::adopt(t, std::move(memory)));
  std::string d = dst.descriptor().serialize();
  TIDE_RETURN_IF_ERROR(t.send(
      0, kTag, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(d.data()), d.size())));
  while (true) {
    TIDE_ASSIGN_OR_RETURN(auto cmd, t.recv(0, kTag, kControlTimeout));
    if (cmd.size() != 1) return TIDE_ERROR(Code::kInvalidArgument, "bad bench command");
    if (cmd[0] == 'Q') break;
    uint64_t h = XXH3_64bits(dst.data(), bytes);
    TIDE_RETURN_IF_ERROR(
        t.send(0, kTag, std::span<const uint8_t>(reinterpret_cast<uint8_t*>(&h), sizeof h)));
  }
  TIDE_RETURN_IF_ERROR(dst.release());
  return sendByte(t, 0, 'B');  // bye: rank 0 may now close
}

struct RankZeroResult {
  std::vector<double> gbps;
  std::vector<double> memcpyGbps;
};

// The shm reference: `threads` threads each memcpy one contiguous share of
// the bytes, as many as the transport's copy threads (--streams), so the
// ratio compares like with like.
void parallelMemcpy(char* dst, const char* src, uint64_t bytes, int threads) {
  if (threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const uint64_t share = (bytes + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    const uint64_t off = std::min(bytes, share * i), len = std::min(share, bytes - off);
    if (len > 0) pool.emplace_back([=] { std::memcpy(dst + off, src + off, len); });
  }
  for (auto& t : pool) t.join();
}

Status verify(Transport& t, uint64_t expected, const char* when) {
  TIDE_RETURN_IF_ERROR(sendByte(t, 1, 'H'));
  TIDE_ASSIGN_OR_RETURN(auto reply, t.recv(1, kTag, kControlTimeout));
  uint64_t got = 0;
  if (reply.size() != sizeof got) return TIDE_ERROR(Code::kInvalidArgument, "bad hash reply");
  std::memcpy(&got, reply.data(), sizeof got);
  if (got != expected)
    return TIDE_ERROR(Code::kDataLoss, std::string("checksum mismatch ") + when +
                                           ": the target does not hold the bytes written");
  return Status::ok();
}

Result<RankZeroResult> rankZero(Transport& t, const TransportBenchOptions& o, bool withMemcpy) {
  TIDE_ASSIGN_OR_RETURN(auto src, t.allocateHost(o.bytes));
  Buffer ref(withMemcpy ? o.bytes : 0);
  if (withMemcpy && !ref.data)
    return TIDE_ERROR(Code::kResourceExhausted, "cannot allocate " + formatBytes(o.bytes));
  char* data = static_cast<char*>(src.data());
  fillPattern(data, o.bytes, 0x7469646562656e63ull);
  if (withMemcpy) std::memset(ref.data.get(), 0, o.bytes);
  const uint64_t expected = XXH3_64bits(data, o.bytes);
  TIDE_ASSIGN_OR_RETURN(auto local, transport::Registration::borrow(t, data, o.bytes));
  TIDE_ASSIGN_OR_RETURN(auto raw, t.recv(1, kTag, kControlTimeout));
  TIDE_ASSIGN_OR_RETURN(auto remote,
                        transport::RemoteRegion::deserialize(std::string(raw.begin(), raw.end())));
  TIDE_RETURN_IF_ERROR(t.importRegion(remote));
  std::vector<Request> reqs;
  for (uint64_t off = 0; off < o.bytes; off += o.block)
    reqs.push_back(Request{Op::kWrite, local.id(), off, 1, remote.id, off,
                           std::min(o.block, o.bytes - off), 0});
  auto once = [&]() -> Result<double> {
    Stopwatch sw;
    TIDE_ASSIGN_OR_RETURN(auto id, t.submit(reqs));
    TIDE_RETURN_IF_ERROR(t.wait(id, kControlTimeout));
    return sw.seconds();
  };
  TIDE_ASSIGN_OR_RETURN(double warm, once());
  (void)warm;
  TIDE_RETURN_IF_ERROR(verify(t, expected, "after the warm-up"));
  RankZeroResult r;
  if (withMemcpy) parallelMemcpy(ref.data.get(), data, o.bytes, o.streams);  // warm-up
  for (int i = 0; i < o.repetitions; ++i) {
    // Interleaved, so that load from elsewhere hits both figures alike.
    TIDE_ASSIGN_OR_RETURN(double s, once());
    r.gbps.push_back(gbps(o.bytes, s));
    if (withMemcpy) {
      Stopwatch sw;
      parallelMemcpy(ref.data.get(), data, o.bytes, o.streams);
      r.memcpyGbps.push_back(gbps(o.bytes, sw.seconds()));
    }
  }
  TIDE_RETURN_IF_ERROR(verify(t, expected, "after the timed runs"));
  if (withMemcpy && XXH3_64bits(ref.data.get(), o.bytes) != expected)
    return TIDE_ERROR(Code::kDataLoss, "memcpy reference produced wrong bytes");
  TIDE_RETURN_IF_ERROR(sendByte(t, 1, 'Q'));
  TIDE_ASSIGN_OR_RETURN(auto bye, t.recv(1, kTag, kControlTimeout));
  (void)bye;
  TIDE_RETURN_IF_ERROR(local.release());
  return r;
}

transport::TransportConfig configFor(const TransportBenchOptions& o, Store& store, int rank) {
  transport::TransportConfig c;
  c.backend = o.backend;
  c.rank = rank;
  c.worldSize = 2;
  c.store = &store;
  c.streams = o.streams;
  c.devices = o.devices;
  c.opTimeoutSeconds = 120;
  return c;
}

nlohmann::json stats(const std::vector<double>& v) {
  Percentiles p = percentiles(v);
  return {{"median", p.median}, {"p5", p.p5}, {"p95", p.p95}};
}

}  // namespace

Percentiles percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    double pos = q * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  return {at(0.5), at(0.05), at(0.95)};
}

Status validate(const TransportBenchOptions& o) {
  static const char* kKnown[] = {"tcp", "shm", "rdma", "nccl"};
  if (std::find(std::begin(kKnown), std::end(kKnown), o.backend) == std::end(kKnown))
    return TIDE_ERROR(Code::kInvalidArgument,
                      "unknown backend '" + o.backend + "' (known: tcp, shm, rdma, nccl)");
  std::string why = transport::whyNotCompiled(o.backend);
  if (!why.empty())
    return TIDE_ERROR(Code::kUnimplemented, "backend '" + o.backend + "' unavailable: " + why);
  if (o.bytes == 0) return TIDE_ERROR(Code::kInvalidArgument, "--size must be at least 1 byte");
  if (o.block == 0) return TIDE_ERROR(Code::kInvalidArgument, "--block must be at least 1 byte");
  if (o.block > o.bytes)
    return TIDE_ERROR(Code::kInvalidArgument, "--block (" + std::to_string(o.block) +
                                                  " B) is larger than --size (" +
                                                  std::to_string(o.bytes) + " B)");
  if (o.bytes / o.block > (1u << 20))
    return TIDE_ERROR(Code::kInvalidArgument,
                      "more than 1048576 requests per batch; use a larger --block");
  if (o.streams < 1 || o.streams > 64)
    return TIDE_ERROR(Code::kInvalidArgument, "--streams must be 1..64");
  if (o.repetitions < 1 || o.repetitions > 1000)
    return TIDE_ERROR(Code::kInvalidArgument, "--repetitions must be 1..1000");
  return Status::ok();
}

Result<nlohmann::json> runTransportBench(const TransportBenchOptions& o) {
  TIDE_RETURN_IF_ERROR(validate(o));
  const bool withMemcpy = o.reference && o.backend == "shm";
  RankZeroResult r;
  auto env = exec::readRankEnv();
  if (env.isOk() && env->worldSize > 1) {  // launched as processes
    if (env->worldSize != 2)
      return TIDE_ERROR(Code::kInvalidArgument, "bench transport needs exactly 2 ranks, launched " +
                                                    std::to_string(env->worldSize));
    TIDE_ASSIGN_OR_RETURN(auto store, exec::connectStore(*env, 60));
    PrefixStore scoped(*store, "bench/");
    TIDE_ASSIGN_OR_RETURN(auto t, transport::createTransport(configFor(o, scoped, env->rank)));
    if (env->rank == 1) {
      TIDE_RETURN_IF_ERROR(rankOne(*t, o.bytes));
      return nlohmann::json();
    }
    TIDE_ASSIGN_OR_RETURN(r, rankZero(*t, o, withMemcpy));
  } else if (!env.isOk() && env.status().code() != Code::kNotFound) {
    return env.status();
  } else {
    MemoryStore store;
    auto peer = std::async(std::launch::async, [&]() -> Status {
      TIDE_ASSIGN_OR_RETURN(auto t, transport::createTransport(configFor(o, store, 1)));
      return rankOne(*t, o.bytes);
    });
    auto t = transport::createTransport(configFor(o, store, 0));
    Result<RankZeroResult> zero = t.isOk() ? rankZero(**t, o, withMemcpy) : t.status();
    if (!zero.isOk()) {
      t = TIDE_ERROR(Code::kCancelled, "closed");  // closing rank 0 unblocks rank 1
      Status one = peer.get();
      // Rank 1's own error is the cause of a lost peer or a timeout on rank 0.
      const Code c = zero.status().code();
      if (!one.isOk() && (c == Code::kUnavailable || c == Code::kTimeout)) {
        TIDE_LOG_INFO("bench transport: rank 0 then failed: {}", zero.status().toString());
        return one.withContext("rank 1");
      }
      return zero.status().withContext("rank 0");
    }
    TIDE_RETURN_IF_ERROR(peer.get().withContext("rank 1"));
    r = std::move(zero).value();
  }

  nlohmann::json reference;
  std::optional<double> refMedian;
  if (!o.reference) {
    reference = {{"name", "none"}, {"skipped", "reference disabled (--no-reference)"}};
  } else if (o.backend == "shm") {
    reference = {{"name", "memcpy"}, {"threads", o.streams}, {"gbps", stats(r.memcpyGbps)}};
    refMedian = percentiles(r.memcpyGbps).median;
  } else if (o.backend == "tcp") {
    std::string iperf3 = findIperf3();
    if (iperf3.empty()) {
      reference = {{"name", "iperf3"}, {"skipped", "reference skipped: iperf3 not installed"}};
    } else {
      std::vector<double> runs;
      Status err;
      int streams = 0;  // as iperf3 itself reports them
      for (int i = 0; i < o.repetitions && err.isOk(); ++i) {
        auto run = runIperf3(iperf3, o.bytes, o.streams, 60);
        if (run.isOk()) {
          runs.push_back(run->gbps);
          streams = run->streams;
        } else {
          err = run.status();
        }
      }
      if (err.isOk() && streams != o.streams)
        err = TIDE_ERROR(Code::kInternal, "iperf3 ran " + std::to_string(streams) +
                                              " streams, not the " + std::to_string(o.streams) +
                                              " of --streams");
      if (!err.isOk())
        reference = {{"name", "iperf3"}, {"skipped", "reference failed: " + err.message()}};
      else {
        reference = {{"name", "iperf3"},
                     {"address", "127.0.0.1"},
                     {"streams", streams},
                     {"gbps", stats(runs)}};
        refMedian = percentiles(runs).median;
      }
    }
  } else {
    reference = {{"name", "none"}, {"skipped", "no reference peer for " + o.backend}};
  }
  Percentiles p = percentiles(r.gbps);
  nlohmann::json out = {{"schema", "tide.bench.transport/1"},
                        {"backend", o.backend},
                        {"bytes", o.bytes},
                        {"block", o.block},
                        {"streams", o.streams},
                        {"repetitions", o.repetitions},
                        {"gbps", {{"median", p.median}, {"p5", p.p5}, {"p95", p.p95}}},
                        {"reference", reference},
                        {"ratio", nullptr}};
  if (refMedian && *refMedian > 0) out["ratio"] = p.median / *refMedian;
  return out;
}

std::string summarize(const nlohmann::json& j) {
  const auto& g = j["gbps"];
  std::string s = fmt::format(
      "bench transport {}: {} in {} requests, {} streams, {} reps: median {:.2f} GB/s (p5 {:.2f}, "
      "p95 {:.2f}); ",
      j["backend"].get<std::string>(), formatBytes(j["bytes"].get<uint64_t>()),
      formatBytes(j["block"].get<uint64_t>()), j["streams"].get<int>(), j["repetitions"].get<int>(),
      g["median"].get<double>(), g["p5"].get<double>(), g["p95"].get<double>());
  const auto& ref = j["reference"];
  if (ref.contains("skipped")) return s + ref["skipped"].get<std::string>();
  double target = j["backend"] == "tcp" ? 0.9 : 0.8;
  double ratio = j["ratio"].is_null() ? 0 : j["ratio"].get<double>();
  // The reference's parallelism, which matches --streams.
  std::string name = ref["name"].get<std::string>();
  if (ref.contains("streams")) name += fmt::format(" -P {}", ref["streams"].get<int>());
  if (ref.contains("threads")) name += fmt::format(" ({} threads)", ref["threads"].get<int>());
  return s + fmt::format("{} {:.2f} GB/s; ratio {:.2f} (target >= {:.1f}: {})", name,
                         ref["gbps"]["median"].get<double>(), ratio, target,
                         ratio >= target ? "met" : "NOT met");
}

}  // namespace tide::harness
