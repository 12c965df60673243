#include "harness/gpu_bench/gpu_bench.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/units.h"
#include "engine/gpu/cuda_status.h"
#include "engine/gpu/device_buffer.h"
#include "engine/gpu/device_checksum.h"
#include "engine/gpu/device_fp8.h"
#include "engine/gpu/host_registration.h"
#include "engine/gpu/ipc.h"
#include "engine/gpu/kernels.h"
#include "engine/gpu/pinned_buffer.h"
#include "engine/gpu/staging.h"
#include "harness/transport_bench/transport_bench.h"

namespace tide::harness {
namespace {

using gpu::cudaCheck;

// Median seconds of `reps` runs of fn after one warm-up.
Result<double> timeMedian(int reps, const std::function<Status()>& fn) {
  TIDE_RETURN_IF_ERROR(fn());
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = nowSeconds();
    TIDE_RETURN_IF_ERROR(fn());
    t.push_back(nowSeconds() - t0);
  }
  return percentiles(t).median;
}

double gbps(uint64_t bytes, double s) {
  return s > 0 ? static_cast<double>(bytes) / s / 1e9 : 0;
}

nlohmann::json row(uint64_t bytes, uint64_t total, double s) {
  return {{"bytes", bytes}, {"total_bytes", total}, {"seconds", s}, {"gbps", gbps(total, s)}};
}

void say(const char* curve, uint64_t bytes, uint64_t total, double s) {
  std::printf("%-26s %10s  %9.6f s  %8.2f GB/s\n", curve, formatBytes(bytes).c_str(), s,
              gbps(total, s));
  std::fflush(stdout);
}

// The staged total for tensors of `bytes`: enough tensors that per-tensor
// overhead shows, bounded so small sizes stay quick.
uint64_t stagedTotal(uint64_t bytes, uint64_t maxBytes) {
  return std::max(bytes,
                  std::min<uint64_t>(std::min<uint64_t>(256ull << 20, maxBytes), bytes * 4096));
}

struct Buffers {
  gpu::DeviceBuffer a, b;
  gpu::PinnedBuffer host;
};

Status stagingCurves(const GpuBenchOptions& o, Buffers& m, nlohmann::json& curves) {
  TIDE_ASSIGN_OR_RETURN(gpu::Stream s, gpu::Stream::create());
  std::vector<gpu::Stream> streams;
  for (int i = 0; i < o.streams; ++i) {
    TIDE_ASSIGN_OR_RETURN(gpu::Stream x, gpu::Stream::create());
    streams.push_back(std::move(x));
  }
  for (auto dir : {gpu::CopyDirection::kDeviceToHost, gpu::CopyDirection::kHostToDevice}) {
    const bool d2h = dir == gpu::CopyDirection::kDeviceToHost;
    const char* perName = d2h ? "d2h_pinned_per_tensor" : "h2d_pinned_per_tensor";
    const char* bucketName = d2h ? "d2h_pinned_bucketed" : "h2d_pinned_bucketed";
    for (uint64_t bytes : gpuBenchSizes(o)) {
      const uint64_t total = stagedTotal(bytes, o.maxBytes);
      std::vector<gpu::StagedTensor> tensors;
      for (uint64_t off = 0; off + bytes <= total; off += bytes)
        tensors.push_back({off, off, bytes});
      TIDE_ASSIGN_OR_RETURN(double per, timeMedian(o.repetitions, [&] {
                              return gpu::copyPerTensor(dir, m.a.bytes(), m.host.data(), tensors,
                                                        s);
                            }));
      TIDE_ASSIGN_OR_RETURN(double buck, timeMedian(o.repetitions, [&]() -> Status {
                              TIDE_ASSIGN_OR_RETURN(
                                  gpu::BucketedCopy c,
                                  gpu::BucketedCopy::start(dir, m.a.bytes(), m.host.data(), tensors,
                                                           o.bucketBytes, streams));
                              return c.waitAll();
                            }));
      auto r = row(bytes, total, per);
      r["tensors"] = tensors.size();
      curves[perName].push_back(r);
      say(perName, bytes, total, per);
      r = row(bytes, total, buck);
      r["tensors"] = tensors.size();
      curves[bucketName].push_back(r);
      say(bucketName, bytes, total, buck);
    }
  }
  return Status::ok();
}

Status kernelCurves(const GpuBenchOptions& o, Buffers& m, nlohmann::json& curves) {
  TIDE_ASSIGN_OR_RETURN(gpu::Stream s, gpu::Stream::create());
  for (uint64_t bytes : gpuBenchSizes(o)) {
    TIDE_ASSIGN_OR_RETURN(
        double d2d, timeMedian(o.repetitions, [&] {
          TIDE_RETURN_IF_ERROR(cudaCheck(
              cudaMemcpyAsync(m.b.data(), m.a.data(), bytes, cudaMemcpyDeviceToDevice, s.get()),
              "D2D"));
          return s.synchronize();
        }));
    curves["d2d"].push_back(row(bytes, bytes, d2d));
    say("d2d", bytes, bytes, d2d);
    // FP8: the bytes as a bf16 matrix of up to 4096 columns; GB/s of bf16 input.
    const int64_t elems = static_cast<int64_t>(bytes / 2);
    const int64_t cols = std::min<int64_t>(4096, elems);
    const int64_t rows = elems / cols;
    for (int block : {64, 128}) {
      TIDE_ASSIGN_OR_RETURN(
          double q, timeMedian(o.repetitions, [&] {
            TIDE_RETURN_IF_ERROR(gpu::quantizeE4m3OnDevice(
                reinterpret_cast<const uint16_t*>(m.a.data()), rows, cols, block, m.b.bytes(),
                reinterpret_cast<float*>(m.b.bytes() + bytes / 2), s));
            return s.synchronize();
          }));
      const std::string name = "fp8_quant_" + std::to_string(block);
      auto r = row(bytes, 2 * rows * cols, q);
      r["rows"] = rows;
      r["cols"] = cols;
      curves[name].push_back(r);
      say(name.c_str(), bytes, 2 * rows * cols, q);
    }
    TIDE_ASSIGN_OR_RETURN(double h, timeMedian(o.repetitions, [&]() -> Status {
                            return gpu::deviceXxh3(m.a.data(), bytes, s).status();
                          }));
    curves["xxh3_checksum"].push_back(row(bytes, bytes, h));
    say("xxh3_checksum", bytes, bytes, h);
  }
  return Status::ok();
}

// cudaHostRegister of malloc'd, touched memory, 4 KiB pages and (where the
// kernel gives them) 2 MiB transparent huge pages.
Status pinCurves(const GpuBenchOptions& o, nlohmann::json& curves) {
  constexpr uint64_t kHuge = 2ull << 20;
  for (bool huge : {false, true}) {
    const char* name = huge ? "pin_cost_thp_2mib" : "pin_cost_4kib_pages";
    for (uint64_t bytes : gpuBenchSizes(o)) {
      if (huge && bytes < kHuge) continue;  // smaller than one huge page
      const uint64_t len = huge ? (bytes + kHuge - 1) / kHuge * kHuge : bytes;
      void* p =
          ::mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return TIDE_ERROR(Code::kResourceExhausted, "mmap for the pin curve");
      auto* base =
          reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1));
      (void)::madvise(base, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
      std::memset(base, 1, len);  // touched, as a buffer the executor filled
      std::vector<double> reg, unreg;
      Status st;
      for (int i = 0; i <= o.repetitions && st.isOk(); ++i) {
        const double t0 = nowSeconds();
        auto r = gpu::HostRegistration::create(base, len);
        if (!r.isOk()) {
          st = r.status();
          break;
        }
        const double t1 = nowSeconds();
        { gpu::HostRegistration gone = std::move(*r); }
        if (i > 0) {  // the first is the warm-up
          reg.push_back(t1 - t0);
          unreg.push_back(nowSeconds() - t1);
        }
      }
      ::munmap(p, len + kHuge);
      TIDE_RETURN_IF_ERROR(st);
      const double r = percentiles(reg).median, u = percentiles(unreg).median;
      curves[name].push_back({{"bytes", len},
                              {"register_seconds", r},
                              {"unregister_seconds", u},
                              {"register_gbps", gbps(len, r)}});
      std::printf("%-26s %10s  register %.6f s  unregister %.6f s\n", name,
                  formatBytes(len).c_str(), r, u);
    }
  }
  return Status::ok();
}

Status ipcCurve(const GpuBenchOptions& o, Buffers& m, nlohmann::json& curves) {
  for (uint64_t bytes : gpuBenchSizes(o)) {
    TIDE_ASSIGN_OR_RETURN(gpu::DeviceBuffer d, gpu::DeviceBuffer::allocate(bytes));
    TIDE_RETURN_IF_ERROR(cudaCheck(
        cudaMemcpy(d.data(), m.a.data(), bytes, cudaMemcpyDeviceToDevice), "filling the export"));
    TIDE_ASSIGN_OR_RETURN(gpu::IpcHandle h, gpu::exportIpc(d));
    const std::string cmd = o.self + " bench gpu-ipc-peer --device " + std::to_string(o.device) +
                            " --handle " + h.toText();
    FILE* f = ::popen(cmd.c_str(), "r");
    if (!f) return TIDE_ERROR(Code::kInternal, "starting the IPC peer");
    char line[1024] = {};
    const bool got = std::fgets(line, sizeof line, f) != nullptr;
    const int rc = ::pclose(f);
    if (!got || rc != 0) {
      return TIDE_ERROR(Code::kInternal,
                        "IPC peer failed (exit " + std::to_string(rc) + "): " + line);
    }
    nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    if (r.is_discarded()) return TIDE_ERROR(Code::kDataLoss, std::string("IPC peer said: ") + line);
    curves["ipc_open_first_copy"].push_back(r);
    std::printf("%-26s %10s  open %.6f s  first copy %.6f s\n", "ipc_open_first_copy",
                formatBytes(bytes).c_str(), r.value("open_seconds", 0.0),
                r.value("first_copy_seconds", 0.0));
  }
  return Status::ok();
}

Result<nlohmann::json> launchOverhead(const GpuBenchOptions& o) {
  TIDE_ASSIGN_OR_RETURN(gpu::Stream s, gpu::Stream::create());
  constexpr int kLaunches = 10000;
  TIDE_ASSIGN_OR_RETURN(double queued, timeMedian(o.repetitions, [&]() -> Status {
                          for (int i = 0; i < kLaunches; ++i) {
                            TIDE_RETURN_IF_ERROR(cudaCheck(gpu::kernels::empty(s.get()), "launch"));
                          }
                          return s.synchronize();
                        }));
  constexpr int kSynced = 1000;
  TIDE_ASSIGN_OR_RETURN(double synced, timeMedian(o.repetitions, [&]() -> Status {
                          for (int i = 0; i < kSynced; ++i) {
                            TIDE_RETURN_IF_ERROR(cudaCheck(gpu::kernels::empty(s.get()), "launch"));
                            TIDE_RETURN_IF_ERROR(s.synchronize());
                          }
                          return Status::ok();
                        }));
  std::printf("kernel launch: %.3f us queued back to back, %.3f us launch + synchronize\n",
              queued / kLaunches * 1e6, synced / kSynced * 1e6);
  return nlohmann::json{{"queued_seconds_per_launch", queued / kLaunches},
                        {"synchronized_seconds_per_launch", synced / kSynced},
                        {"launches", kLaunches}};
}

}  // namespace

Status validate(const GpuBenchOptions& o) {
  if (o.minBytes < 4096 || o.minBytes > o.maxBytes) {
    return TIDE_ERROR(Code::kInvalidArgument, "--min-size must be >= 4KiB and <= --max-size");
  }
  if (o.maxBytes > (16ull << 30)) return TIDE_ERROR(Code::kInvalidArgument, "--max-size > 16GiB");
  if (o.repetitions < 1 || o.repetitions > 1000) {
    return TIDE_ERROR(Code::kInvalidArgument, "--repetitions must be 1..1000");
  }
  if (o.streams < 1 || o.streams > 64) return TIDE_ERROR(Code::kInvalidArgument, "--streams 1..64");
  if (o.bucketBytes == 0) return TIDE_ERROR(Code::kInvalidArgument, "--bucket must be > 0");
  return Status::ok();
}

std::vector<uint64_t> gpuBenchSizes(const GpuBenchOptions& o) {
  std::vector<uint64_t> v;
  for (uint64_t s = o.minBytes; s <= o.maxBytes; s *= 4) {
    v.push_back(s);
    if (s > o.maxBytes / 4) break;
  }
  if (v.back() != o.maxBytes) v.push_back(o.maxBytes);
  return v;
}

Result<nlohmann::json> runGpuBench(const GpuBenchOptions& o) {
  TIDE_RETURN_IF_ERROR(validate(o));
  if (gpu::deviceCount() == 0) return TIDE_ERROR(Code::kUnavailable, gpu::kNoDevice);
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaSetDevice(o.device), "cudaSetDevice"));
  TIDE_ASSIGN_OR_RETURN(gpu::DeviceInfo info, gpu::deviceInfo(o.device));
  std::printf("gpu %d: %s (sm_%d%d, %s), driver %s, CUDA runtime %s\n", info.index,
              info.name.c_str(), info.computeMajor, info.computeMinor,
              formatBytes(info.memoryBytes).c_str(),
              gpu::DeviceInfo::versionText(info.driverVersion).c_str(),
              gpu::DeviceInfo::versionText(info.runtimeVersion).c_str());
  Buffers m;
  TIDE_ASSIGN_OR_RETURN(m.a, gpu::DeviceBuffer::allocate(o.maxBytes));
  TIDE_ASSIGN_OR_RETURN(m.b, gpu::DeviceBuffer::allocate(o.maxBytes + (o.maxBytes >> 8) + 4096));
  TIDE_ASSIGN_OR_RETURN(m.host, gpu::PinnedBuffer::allocate(o.maxBytes));
  // Bounded bf16 values (0x3f80 = 1.0 and a spread of others), so the FP8
  // curve quantizes ordinary numbers.
  std::vector<uint16_t> pattern(1 << 20);
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<uint16_t>(0x3c00 + (i * 7919) % 0x600);
  for (uint64_t off = 0; off < o.maxBytes; off += 2 * pattern.size()) {
    const uint64_t n = std::min<uint64_t>(2 * pattern.size(), o.maxBytes - off);
    TIDE_RETURN_IF_ERROR(cudaCheck(
        cudaMemcpy(m.a.bytes() + off, pattern.data(), n, cudaMemcpyHostToDevice), "fill"));
  }
  nlohmann::json curves = nlohmann::json::object();
  TIDE_RETURN_IF_ERROR(stagingCurves(o, m, curves));
  TIDE_RETURN_IF_ERROR(kernelCurves(o, m, curves));
  TIDE_RETURN_IF_ERROR(pinCurves(o, curves));
  TIDE_RETURN_IF_ERROR(ipcCurve(o, m, curves));
  TIDE_ASSIGN_OR_RETURN(nlohmann::json launch, launchOverhead(o));
  return nlohmann::json{
      {"schema", "tide.bench.gpu/1"},
      {"gpu",
       {{"index", info.index},
        {"name", info.name},
        {"compute_capability",
         std::to_string(info.computeMajor) + "." + std::to_string(info.computeMinor)},
        {"memory_bytes", info.memoryBytes},
        {"driver_version", gpu::DeviceInfo::versionText(info.driverVersion)},
        {"cuda_runtime_version", gpu::DeviceInfo::versionText(info.runtimeVersion)}}},
      {"units", "bytes; seconds (median of the repetitions after one warm-up); gbps = 1e9 B/s"},
      {"repetitions", o.repetitions},
      {"bucket_bytes", o.bucketBytes},
      {"streams", o.streams},
      {"page_bytes", ::sysconf(_SC_PAGESIZE)},
      {"curves", std::move(curves)},
      {"kernel_launch", std::move(launch)}};
}

Status runGpuIpcPeer(const std::string& handle, int device) {
  TIDE_ASSIGN_OR_RETURN(gpu::IpcHandle h, gpu::IpcHandle::fromText(handle));
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaSetDevice(device), "cudaSetDevice"));
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaFree(nullptr), "creating the CUDA context"));
  TIDE_ASSIGN_OR_RETURN(gpu::DeviceBuffer dst, gpu::DeviceBuffer::allocate(h.size));
  TIDE_ASSIGN_OR_RETURN(gpu::Stream s, gpu::Stream::create());
  const double t0 = nowSeconds();
  TIDE_ASSIGN_OR_RETURN(gpu::IpcMapping m, gpu::IpcMapping::open(h));
  const double t1 = nowSeconds();
  TIDE_RETURN_IF_ERROR(cudaCheck(
      cudaMemcpyAsync(dst.data(), m.data(), h.size, cudaMemcpyDeviceToDevice, s.get()), "D2D"));
  TIDE_RETURN_IF_ERROR(s.synchronize());
  const double t2 = nowSeconds();
  const nlohmann::json r = {{"bytes", h.size},
                            {"open_seconds", t1 - t0},
                            {"first_copy_seconds", t2 - t1},
                            {"first_copy_gbps", gbps(h.size, t2 - t1)}};
  std::printf("%s\n", r.dump().c_str());
  return Status::ok();
}

}  // namespace tide::harness
