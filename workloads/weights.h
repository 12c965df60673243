#pragma once
// Synthetic, versioned BF16 weights. Version 0 is the initial model: each
// element is a pure function of (seed, tensor, element index). Version V >= 1
// is bf16(master_V), where master_V is the FP32 master weight after V AdamW
// steps on synthetic gradients (see rl_update.h); the gradients are
// counter-based random numbers too, so master_V is computed per element by
// replaying the V steps. Any rank can therefore produce or verify any element
// of any version without communication or stored state.
//
// Cost: version 0 is a hash per element (>= 1 GB/s per core, see
// docs/workloads.md); version V costs V AdamW steps per element (a few ns
// each). For many consecutive versions of the same box use VersionedBox,
// which keeps the FP32 state and advances one step at a time.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "workloads/box.h"
#include "workloads/rl_update.h"
#include "workloads/routing.h"
#include "workloads/tensor.h"

namespace tide::workloads {

// bf16 bits of a float, round to nearest even (what a framework's cast does).
inline uint16_t toBf16(float f);
inline uint16_t toBf16Finite(float f);  // no NaN check: for values known to be finite
inline float fromBf16(uint16_t b);

class SyntheticWeights {
 public:
  // The inventory must outlive this object. Versions 0..maxVersion can be
  // produced; routing (copied) must then cover maxVersion steps, or be empty
  // (routed experts then get a gradient every step).
  SyntheticWeights(const ModelInventory& inv, RoutingTrace routing, const RlConfig& cfg,
                   int maxVersion);

  const ModelInventory& inventory() const { return inv_; }
  const RoutingTrace& routing() const { return routing_; }
  const RlConfig& config() const { return cfg_; }
  int maxVersion() const { return maxVersion_; }

  // Writes the box's elements of `version`, row-major within the box, as bf16
  // bits. out.size() must equal box.volume().
  Status fillBox(uint32_t tensor, const Box& box, int version, std::span<uint16_t> out) const;
  // Flat (row-major over the whole tensor) element range.
  void fillFlat(uint32_t tensor, uint64_t begin, uint64_t count, int version, uint16_t* out) const;
  // Version 0 only, the fast path (no replay).
  void fillInitial(uint32_t tensor, uint64_t begin, uint64_t count, uint16_t* out) const;
  // XXH3-64 of the box's bf16 bytes (little-endian, row-major within the box).
  Result<uint64_t> boxChecksum(uint32_t tensor, const Box& box, int version) const;

  // The AdamW schedule of a tensor (steps 1..maxVersion). Tensors that are
  // not routed experts share one schedule; each (MoE layer, expert) has its own.
  const AdamSchedule& schedule(uint32_t tensor) const;
  float initStd(uint32_t tensor) const { return initStd_[tensor]; }
  float initMean(uint32_t tensor) const { return initMean_[tensor]; }

  // FP32 state of elements after `version` steps (master, m, v), flat
  // indices; dir receives each element's persistent gradient direction.
  void replay(uint32_t tensor, const uint64_t* flat, size_t n, int version, float* master, float* m,
              float* v, float* dir) const;
  void initialMaster(uint32_t tensor, const uint64_t* flat, size_t n, float* master) const;
  void directions(uint32_t tensor, const uint64_t* flat, size_t n, float* dir) const;

 private:
  const ModelInventory& inv_;
  RoutingTrace routing_;
  RlConfig cfg_;
  int maxVersion_;
  std::vector<float> initStd_;        // per tensor
  std::vector<float> initMean_;       // per tensor
  std::vector<uint32_t> scheduleOf_;  // per tensor: index into schedules_
  std::vector<AdamSchedule> schedules_;
};

// Keeps the FP32 master / m / v of one box and steps it one version at a
// time: O(1) per element per version instead of O(version).
class VersionedBox {
 public:
  VersionedBox(const SyntheticWeights& w, uint32_t tensor, Box box);
  int version() const { return version_; }
  // Advances to version() + 1 and writes its bf16 bits (row-major within the box).
  Status advance(std::span<uint16_t> out);
  // The current version's bf16 bits.
  void current(std::span<uint16_t> out) const;

 private:
  const SyntheticWeights& w_;
  uint32_t tensor_;
  Box box_;
  int version_ = 0;
  std::vector<uint64_t> flat_;  // flat index of each element
  std::vector<float> master_, m_, v_, dir_;
};

// Changed-element statistics of versions 0..steps (see ChangeStats).
// samplePerTensor = 0 checks every element (exact); otherwise a fixed,
// evenly strided sample of min(samplePerTensor, numel) elements per tensor.
// Runs on `threads` threads (0 = hardware concurrency). recordIndices (exact
// runs only) also keeps the flat index of every change (ChangeStats).
Result<ChangeStats> measureChanges(const SyntheticWeights& w, int steps, uint64_t samplePerTensor,
                                   int threads, bool recordIndices = false);

// Flat (row-major over the tensor) index of each element of a box, in box order.
std::vector<uint64_t> boxFlatIndices(const std::vector<uint64_t>& shape, const Box& box);

inline uint16_t toBf16(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline uint16_t toBf16Finite(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float fromBf16(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

}  // namespace tide::workloads
