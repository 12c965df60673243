// `tide bench transport`: point-to-point throughput of a transport backend
// against a reference measured in the same run (see transport_bench.h).
// `tide bench register`: a backend's registration cost by region size
// (register_bench.h).

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "engine/core/units.h"
#include "harness/command.h"
#ifdef TIDE_HAVE_GPU
#include "engine/gpu/cuda_status.h"
#include "harness/gpu_bench/gpu_bench.h"
#endif
#include "harness/run_context.h"
#include "harness/transport_bench/register_bench.h"
#include "harness/transport_bench/transport_bench.h"

namespace tide::harness {
namespace {

struct BenchArgs {
  std::string backend = "tcp";
  std::string size = "1GiB";
  std::string block = "4MiB";
  std::string streams = "4";
  std::string repetitions = "5";
  std::vector<std::string> devices;
  std::string json;
  bool noReference = false;
};

Result<int> parseSmallCount(const std::string& flag, const std::string& text) {
  auto v = parseCount(text);
  if (!v.isOk()) return TIDE_ERROR(Code::kInvalidArgument, flag + ": " + v.status().message());
  if (*v > 1000000) return TIDE_ERROR(Code::kInvalidArgument, flag + " too large: " + text);
  return static_cast<int>(*v);
}

struct RegisterArgs {
  std::string backend = "tcp";
  std::vector<std::string> sizes = {"4MiB", "64MiB", "256MiB"};
  std::string repetitions = "5";
  std::vector<std::string> devices;
  std::string json;
};

Status writeResult(const std::string& path, const nlohmann::json& result) {
  if (path.empty()) return Status::ok();
  std::ofstream out(path, std::ios::trunc);
  out << result.dump(2) << "\n";
  if (!out) return TIDE_ERROR(Code::kInternal, "writing " + path + " failed");
  return Status::ok();
}

void runRegister(const RegisterArgs& a) {
  RegisterBenchOptions o;
  o.backend = a.backend;
  for (const auto& s : a.sizes) {
    auto v = parseSize(s);
    if (!v.isOk()) throw StatusError(v.status().withContext("--sizes"));
    o.sizes.push_back(*v);
  }
  o.repetitions = orThrow(parseSmallCount("--repetitions", a.repetitions));
  o.devices = a.devices;
  nlohmann::json result = orThrow(runRegisterBench(o));
  result["context"] = runContext();
  orThrow(writeResult(a.json, result));
}

void runTransport(const BenchArgs& a) {
  TransportBenchOptions o;
  o.backend = a.backend;
  auto withFlag = [](const char* flag, Result<uint64_t> r) {
    if (!r.isOk()) throw StatusError(r.status().withContext(flag));
    return *r;
  };
  o.bytes = withFlag("--size", parseSize(a.size));
  o.block = withFlag("--block", parseSize(a.block));
  o.streams = orThrow(parseSmallCount("--streams", a.streams));
  o.repetitions = orThrow(parseSmallCount("--repetitions", a.repetitions));
  o.devices = a.devices;
  o.reference = !a.noReference;
  orThrow(validate(o));
  if (!a.json.empty()) {  // fail before the run, not after it
    std::ofstream probe(a.json, std::ios::app);
    if (!probe)
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "cannot write --json " + a.json));
  }
  nlohmann::json result = orThrow(runTransportBench(o));
  if (result.is_null()) return;  // rank 1 of a launched pair: rank 0 reports
  result["context"] = runContext();
  std::printf("%s\n", summarize(result).c_str());
  orThrow(writeResult(a.json, result));
}

struct GpuArgs {
  std::string minSize = "4KiB";
  std::string maxSize = "1GiB";
  std::string repetitions = "5";
  std::string bucket = "64MiB";
  std::string streams = "2";
  std::string device = "0";
  std::string json;
  std::string handle;  // gpu-ipc-peer
};

// Exit 77 with one line "tide: skipped: <reason>" (the automake convention the test
// scripts and `tide reproduce` read) where the GPU bench cannot run.
[[noreturn]] void skipGpu(const std::string& why) {
  throw CLI::RuntimeError("skipped: " + why, 77);
}

void runGpu(const GpuArgs& a) {
#ifdef TIDE_HAVE_GPU
  GpuBenchOptions o;
  auto withFlag = [](const char* flag, Result<uint64_t> r) {
    if (!r.isOk()) throw StatusError(r.status().withContext(flag));
    return *r;
  };
  o.minBytes = withFlag("--min-size", parseSize(a.minSize));
  o.maxBytes = withFlag("--max-size", parseSize(a.maxSize));
  o.bucketBytes = withFlag("--bucket", parseSize(a.bucket));
  o.repetitions = orThrow(parseSmallCount("--repetitions", a.repetitions));
  o.streams = orThrow(parseSmallCount("--streams", a.streams));
  o.device = orThrow(parseSmallCount("--device", a.device));
  // The IPC curve's peer is this executable again.
  char self[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw StatusError(TIDE_ERROR(Code::kInternal, "readlink /proc/self/exe"));
  o.self = self;
  orThrow(validate(o));
  if (gpu::deviceCount() == 0) skipGpu(gpu::kNoDevice);  // before --json is touched
  if (!a.json.empty()) {
    std::ofstream probe(a.json, std::ios::app);
    if (!probe)
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "cannot write --json " + a.json));
  }
  auto r = runGpuBench(o);
  if (!r.isOk() && r.status().code() == Code::kUnavailable) skipGpu(r.status().message());
  nlohmann::json result = orThrow(std::move(r));
  result["context"] = runContext();
  orThrow(writeResult(a.json, result));
#else
  (void)a;
  skipGpu("built without CUDA (TIDE_WITH_CUDA=OFF or no CUDA toolkit)");
#endif
}

}  // namespace

void addBenchCommand(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks of tide's data paths");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchArgs>();
  auto* t = bench->add_subcommand(
      "transport",
      "Rank 0 WRITEs --size bytes to rank 1 in --block requests; GB/s (1e9 B/s) vs a reference "
      "(tcp: iperf3 -P <streams> over loopback; shm: memcpy by <streams> threads). Two threads by "
      "default, or two processes under `tide launch -n 2 --`");
  t->add_option("--backend", args->backend, "tcp | shm | rdma | nccl")->capture_default_str();
  t->add_option("--size", args->size, "bytes per repetition (B, KiB, MiB, GiB, KB, MB, GB)")
      ->capture_default_str();
  t->add_option("--block", args->block, "bytes per request")->capture_default_str();
  t->add_option("--streams", args->streams, "connections / copy threads per peer")
      ->capture_default_str();
  t->add_option("--repetitions", args->repetitions, "timed repetitions after one warm-up")
      ->capture_default_str();
  t->add_option("--device", args->devices, "rdma device(s), e.g. rxe0");
  t->add_option("--json", args->json, "write the result document here");
  t->add_flag("--no-reference", args->noReference, "skip the reference measurement");
  t->callback([args] { runTransport(*args); });

  auto reg = std::make_shared<RegisterArgs>();
  auto* r = bench->add_subcommand(
      "register",
      "Registration cost of a backend by region size: one rank registers a freshly allocated, "
      "touched buffer (as the executor's set-up does) and deregisters it; median seconds and "
      "seconds per page");
  r->add_option("--backend", reg->backend, "tcp | shm | rdma")->capture_default_str();
  r->add_option("--sizes", reg->sizes, "region sizes (B, KiB, MiB, GiB, KB, MB, GB)")
      ->delimiter(',')
      ->capture_default_str();
  r->add_option("--repetitions", reg->repetitions, "timed repetitions per size")
      ->capture_default_str();
  r->add_option("--device", reg->devices, "rdma device(s), e.g. rxe0");
  r->add_option("--json", reg->json, "write the result document here");
  r->callback([reg] { runRegister(*reg); });

  auto gpu = std::make_shared<GpuArgs>();
  auto* g = bench->add_subcommand(
      "gpu",
      "GPU paths by tensor size (--min-size .. --max-size, x4 steps): D2H/H2D into pinned memory "
      "per tensor and bucketed, D2D, FP8 quantization (64 and 128 blocks), the XXH3 checksum, "
      "cudaHostRegister cost by size and page size, CUDA IPC open + first copy, kernel launch "
      "overhead; GB/s = 1e9 B/s. Exit 77 with \"skipped: no CUDA device\" where there is none");
  g->add_option("--min-size", gpu->minSize, "smallest tensor")->capture_default_str();
  g->add_option("--max-size", gpu->maxSize, "largest tensor (device and pinned buffers of it)")
      ->capture_default_str();
  g->add_option("--repetitions", gpu->repetitions, "timed repetitions after one warm-up")
      ->capture_default_str();
  g->add_option("--bucket", gpu->bucket, "bucketed staging: bytes per bucket")
      ->capture_default_str();
  g->add_option("--streams", gpu->streams, "bucketed staging: CUDA streams")->capture_default_str();
  g->add_option("--device", gpu->device, "CUDA device index")->capture_default_str();
  g->add_option("--json", gpu->json, "write the result document here");
  g->callback([gpu] { runGpu(*gpu); });

  // The importing process of the IPC curve (started by `bench gpu`).
  auto* peer = bench->add_subcommand("gpu-ipc-peer", "");
  peer->group("");
  peer->add_option("--handle", gpu->handle, "exported CUDA IPC handle")->required();
  peer->add_option("--device", gpu->device, "CUDA device index");
  peer->callback([gpu] {
#ifdef TIDE_HAVE_GPU
    orThrow(runGpuIpcPeer(gpu->handle, orThrow(parseSmallCount("--device", gpu->device))));
#else
    skipGpu("built without CUDA (TIDE_WITH_CUDA=OFF or no CUDA toolkit)");
#endif
  });
}

}  // namespace tide::harness
