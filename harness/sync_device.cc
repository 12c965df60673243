#include "harness/sync_device.h"

#include <CLI/CLI.hpp>
#include <string>

#include "engine/core/units.h"
#include "engine/gpu/host_shard_memory.h"
#ifdef TIDE_HAVE_GPU
#include "engine/gpu/cuda_shard_memory.h"
#include "engine/gpu/cuda_status.h"
#endif

namespace tide::harness {

namespace {

gpu::StagingOptions stagingOf(const SyncArgs& a) {
  gpu::StagingOptions s;
  s.streams = a.stagingStreams;
  if (a.staging == Staging::kBucketed) {
    auto b = parseSize(a.stagingBucket);
    s.bucketBytes = b.isOk() ? *b : 0;
  }
  return s;
}

}  // namespace

Status checkDeviceMemory(const SyncArgs& a, const Prepared& p) {
  auto bucket = parseSize(a.stagingBucket);
  if (!bucket.isOk()) return bucket.status().withContext("--staging-bucket");
  if (*bucket == 0) return TIDE_ERROR(Code::kInvalidArgument, "--staging-bucket must be > 0");
  if (a.stagingStreams < 1 || a.stagingStreams > 64) {
    return TIDE_ERROR(Code::kInvalidArgument, "--staging-streams must be 1..64");
  }
  if (!a.deviceMemory) return Status::ok();
  if (p.mode != exec::UpdateMode::kFull) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "--device-memory takes full updates (p2p, broadcast), not --sparse, "
                      "disk-delta or the store");
  }
  if (a.switchMode != SwitchMode::kInplace) {
    return TIDE_ERROR(Code::kInvalidArgument, "--device-memory updates in place: drop --switch");
  }
  if (a.chaos.on()) {
    return TIDE_ERROR(Code::kInvalidArgument, "--device-memory does not run the --chaos soak");
  }
  return Status::ok();
}

void skipWithoutDevice(const SyncArgs& a) {
  if (!a.deviceMemory || a.deviceMemoryImpl != ShardMemoryKind::kCuda) return;
#ifdef TIDE_HAVE_GPU
  if (gpu::deviceCount() == 0)
    throw CLI::RuntimeError(std::string("skipped: ") + gpu::kNoDevice, 77);
#else
  throw CLI::RuntimeError("skipped: built without CUDA (TIDE_WITH_CUDA=OFF or no CUDA toolkit)",
                          77);
#endif
}

void setDeviceMemory(const SyncArgs& a, exec::RankRunOptions& o) {
  if (!a.deviceMemory) return;
  o.exec.staging = stagingOf(a);
  const bool host = a.deviceMemoryImpl == ShardMemoryKind::kHost;
  o.exec.shardMemory = [host](const workloads::SyntheticWeights& w,
                              int rank) -> Result<std::unique_ptr<gpu::ShardMemory>> {
    if (host) return gpu::makeHostShardMemory(w);
#ifdef TIDE_HAVE_GPU
    // The ranks of one host share its GPUs round robin.
    const int n = gpu::deviceCount();
    return gpu::makeCudaShardMemory(w, n > 0 ? rank % n : 0);
#else
    (void)w;
    (void)rank;
    return TIDE_ERROR(Code::kUnavailable, "--device-memory: built without CUDA");
#endif
  };
}

nlohmann::json deviceMemoryJson(const SyncArgs& a) {
  if (!a.deviceMemory) return nullptr;
  const gpu::StagingOptions s = stagingOf(a);
  nlohmann::json j = {{"memory", nameOf(kShardMemoryKinds, a.deviceMemoryImpl)},
                      {"staging", nameOf(kStagings, a.staging)},
                      {"bucket_bytes", s.bucketBytes},
                      {"streams", s.streams}};
#ifdef TIDE_HAVE_GPU
  if (a.deviceMemoryImpl == ShardMemoryKind::kCuda) {
    if (auto info = gpu::deviceInfo(0); info.isOk()) {
      j["gpu"] = {{"name", info->name},
                  {"driver_version", gpu::DeviceInfo::versionText(info->driverVersion)},
                  {"cuda_runtime_version", gpu::DeviceInfo::versionText(info->runtimeVersion)},
                  {"devices", gpu::deviceCount()}};
    }
  }
#endif
  return j;
}

}  // namespace tide::harness
