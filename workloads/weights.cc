#include "workloads/weights.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include "workloads/rng.h"
#include "workloads/simd.h"

namespace tide::workloads {

namespace {

constexpr size_t kChunk = 4096;  // elements per inner batch (fits L1/L2 with its state)

// Version-0 elements 4q .. 4q+3 for q in [q0, q0 + nq): four 16-bit normals per
// hash. Inlined into a baseline and an AVX-512 copy (simd.h).
[[gnu::always_inline]] inline void initialQuads(uint64_t key, float mean, float sd,
                                                const float* table, uint64_t q0, uint64_t nq,
                                                uint16_t* out) {
  for (uint64_t q = 0; q < nq; ++q) {
    const uint64_t h = counterHash(key, q0 + q);
    out[4 * q + 0] = toBf16Finite(mean + sd * table[h & 0xffff]);
    out[4 * q + 1] = toBf16Finite(mean + sd * table[(h >> 16) & 0xffff]);
    out[4 * q + 2] = toBf16Finite(mean + sd * table[(h >> 32) & 0xffff]);
    out[4 * q + 3] = toBf16Finite(mean + sd * table[h >> 48]);
  }
}

TIDE_TARGET_AVX512 void initialQuadsAvx512(uint64_t key, float mean, float sd, const float* table,
                                           uint64_t q0, uint64_t nq, uint16_t* out) {
  initialQuads(key, mean, sd, table, q0, nq, out);
}

}  // namespace

std::vector<uint64_t> boxFlatIndices(const std::vector<uint64_t>& shape, const Box& box) {
  std::vector<uint64_t> out;
  const uint64_t vol = box.volume();
  if (vol == 0 || box.rank() != shape.size()) return out;
  out.reserve(vol);
  const size_t r = shape.size();
  std::vector<uint64_t> stride(r, 1);
  for (size_t d = r; d-- > 1;) stride[d - 1] = stride[d] * shape[d];
  std::vector<uint64_t> idx(box.lo);
  const uint64_t rowLen = box.hi[r - 1] - box.lo[r - 1];
  while (true) {
    uint64_t base = 0;
    for (size_t d = 0; d < r; ++d) base += idx[d] * stride[d];
    for (uint64_t c = 0; c < rowLen; ++c) out.push_back(base + c);
    // Next row: increment the dims before the last, odometer style.
    size_t d = r - 1;
    while (d > 0) {
      --d;
      if (++idx[d] < box.hi[d]) break;
      idx[d] = box.lo[d];
      if (d == 0) return out;
    }
    if (r == 1) return out;
  }
}

SyntheticWeights::SyntheticWeights(const ModelInventory& inv, RoutingTrace routing,
                                   const RlConfig& cfg, int maxVersion)
    : inv_(inv), routing_(std::move(routing)), cfg_(cfg), maxVersion_(std::max(0, maxVersion)) {
  if (!routing_.empty()) maxVersion_ = std::min(maxVersion_, routing_.steps);
  const size_t n = inv_.tensors.size();
  initStd_.resize(n);
  initMean_.resize(n);
  scheduleOf_.assign(n, 0);
  // Schedule 0: tensors that get a gradient every step.
  schedules_.push_back(buildSchedule(cfg_, std::vector<float>(maxVersion_, 1.0f)));
  std::vector<double> meanTokens;  // per (step, moe layer)
  if (!routing_.empty()) {
    meanTokens.resize(static_cast<size_t>(routing_.steps) * routing_.moeLayers);
    for (int s = 0; s < routing_.steps; ++s) {
      for (int l = 0; l < routing_.moeLayers; ++l) {
        double sum = 0;
        for (int e = 0; e < routing_.experts; ++e) sum += routing_.tokens(s, l, e);
        meanTokens[static_cast<size_t>(s) * routing_.moeLayers + l] =
            std::max(1.0, sum / std::max(1, routing_.experts));
      }
    }
  }
  std::vector<int64_t> classOf(
      routing_.empty() ? 0 : static_cast<size_t>(routing_.moeLayers) * routing_.experts, -1);
  for (size_t t = 0; t < n; ++t) {
    const TensorSpec& ts = inv_.tensors[t];
    initMean_[t] = ts.kind == TensorKind::kNorm ? 1.0f : 0.0f;
    initStd_[t] = ts.kind == TensorKind::kNorm ? 0.1f : 0.02f;
    if (ts.kind != TensorKind::kRoutedExpert || routing_.empty()) continue;
    const int l = ts.layer - routing_.firstMoeLayer;
    if (l < 0 || l >= routing_.moeLayers || ts.expert < 0 || ts.expert >= routing_.experts) {
      continue;
    }
    int64_t& cls = classOf[static_cast<size_t>(l) * routing_.experts + ts.expert];
    if (cls < 0) {
      std::vector<float> scales(maxVersion_);
      for (int s = 0; s < maxVersion_; ++s) {
        const uint32_t tok = routing_.tokens(s, l, ts.expert);
        scales[s] = tok == 0
                        ? 0.0f
                        : static_cast<float>(std::sqrt(
                              tok / meanTokens[static_cast<size_t>(s) * routing_.moeLayers + l]));
      }
      cls = static_cast<int64_t>(schedules_.size());
      schedules_.push_back(buildSchedule(cfg_, scales));
    }
    scheduleOf_[t] = static_cast<uint32_t>(cls);
  }
}

const AdamSchedule& SyntheticWeights::schedule(uint32_t tensor) const {
  return schedules_[scheduleOf_[tensor]];
}

void SyntheticWeights::fillInitial(uint32_t tensor, uint64_t begin, uint64_t count,
                                   uint16_t* out) const {
  // Element i uses 16 bits (chunk i mod 4) of hash(key, i / 4).
  const uint64_t key = streamKey(cfg_.seed, tensor, 0, kStreamInit);
  const float mean = initMean_[tensor], sd = initStd_[tensor];
  const float* table = normalTable();
  uint64_t i = begin;
  const uint64_t end = begin + count;
  for (; i < end && (i & 3); ++i) {
    *out++ = toBf16(mean + sd * normalFromU16(table, counterHash(key, i >> 2), i & 3));
  }
  const uint64_t nq = end >= i ? (end - i) / 4 : 0;
  if (cpuHasAvx512()) {
    initialQuadsAvx512(key, mean, sd, table, i >> 2, nq, out);
  } else {
    initialQuads(key, mean, sd, table, i >> 2, nq, out);
  }
  i += 4 * nq;
  out += 4 * nq;
  for (; i < end; ++i) {
    *out++ = toBf16(mean + sd * normalFromU16(table, counterHash(key, i >> 2), i & 3));
  }
}

void SyntheticWeights::initialMaster(uint32_t tensor, const uint64_t* flat, size_t n,
                                     float* master) const {
  const uint64_t key = streamKey(cfg_.seed, tensor, 0, kStreamInit);
  const float mean = initMean_[tensor], sd = initStd_[tensor];
  const float* table = normalTable();
  for (size_t i = 0; i < n; ++i) {
    master[i] = mean + sd * normalFromU16(table, counterHash(key, flat[i] >> 2), flat[i] & 3);
  }
}

void SyntheticWeights::directions(uint32_t tensor, const uint64_t* flat, size_t n,
                                  float* dir) const {
  const uint64_t key = streamKey(cfg_.seed, tensor, 0, kStreamDirection);
  for (size_t i = 0; i < n; ++i) dir[i] = normalFromBits(counterHash(key, flat[i]));
}

void SyntheticWeights::replay(uint32_t tensor, const uint64_t* flat, size_t n, int version,
                              float* master, float* m, float* v, float* dir) const {
  initialMaster(tensor, flat, n, master);
  std::fill(m, m + n, 0.0f);
  std::fill(v, v + n, 0.0f);
  directions(tensor, flat, n, dir);
  const AdamSchedule& sched = schedule(tensor);
  for (int s = 1; s <= version; ++s) {
    const auto& st = sched.steps[s - 1];
    if (!st.active) continue;
    adamStep(cfg_, streamKey(cfg_.seed, tensor, static_cast<uint64_t>(s), kStreamGrad), st, flat,
             dir, n, master, m, v);
  }
}

void SyntheticWeights::fillFlat(uint32_t tensor, uint64_t begin, uint64_t count, int version,
                                uint16_t* out) const {
  if (version <= 0) {
    fillInitial(tensor, begin, count, out);
    return;
  }
  std::vector<uint64_t> flat(kChunk);
  std::vector<float> master(kChunk), m(kChunk), v(kChunk), dir(kChunk);
  for (uint64_t off = 0; off < count; off += kChunk) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, count - off));
    for (size_t j = 0; j < n; ++j) flat[j] = begin + off + j;
    replay(tensor, flat.data(), n, version, master.data(), m.data(), v.data(), dir.data());
    for (size_t j = 0; j < n; ++j) out[off + j] = toBf16(master[j]);
  }
}

Status SyntheticWeights::fillBox(uint32_t tensor, const Box& box, int version,
                                 std::span<uint16_t> out) const {
  if (tensor >= inv_.tensors.size()) {
    return TIDE_ERROR(Code::kOutOfRange, "tensor " + std::to_string(tensor) + " not in inventory");
  }
  if (version < 0 || version > maxVersion_) {
    return TIDE_ERROR(Code::kOutOfRange, "version " + std::to_string(version) + " outside 0.." +
                                             std::to_string(maxVersion_));
  }
  const TensorSpec& t = inv_.tensors[tensor];
  if (!Box::full(t.shape).contains(box)) {
    return TIDE_ERROR(Code::kOutOfRange, "box " + box.toString() + " outside " + t.name + " " +
                                             Box::full(t.shape).toString());
  }
  if (out.size() != box.volume()) {
    return TIDE_ERROR(Code::kInvalidArgument, "buffer of " + std::to_string(out.size()) +
                                                  " elements for a box of " +
                                                  std::to_string(box.volume()));
  }
  if (box.volume() == 0) return Status::ok();
  // Row by row: each innermost row of the box is a contiguous flat range.
  const size_t r = t.shape.size();
  const uint64_t rowLen = box.hi[r - 1] - box.lo[r - 1];
  std::vector<uint64_t> stride(r, 1);
  for (size_t d = r; d-- > 1;) stride[d - 1] = stride[d] * t.shape[d];
  std::vector<uint64_t> idx(box.lo);
  uint64_t pos = 0;
  while (pos < out.size()) {
    uint64_t base = 0;
    for (size_t d = 0; d < r; ++d) base += idx[d] * stride[d];
    fillFlat(tensor, base, rowLen, version, out.data() + pos);
    pos += rowLen;
    for (size_t d = r - 1; d-- > 0;) {
      if (++idx[d] < box.hi[d]) break;
      idx[d] = box.lo[d];
    }
  }
  return Status::ok();
}

Result<uint64_t> SyntheticWeights::boxChecksum(uint32_t tensor, const Box& box, int version) const {
  XXH3_state_t* st = XXH3_createState();
  if (!st) return TIDE_ERROR(Code::kResourceExhausted, "XXH3_createState");
  XXH3_64bits_reset(st);
  // Stream the box in slabs of whole rows so memory stays bounded.
  Status s;
  const uint64_t vol = box.volume();
  if (vol > 0 && box.rank() >= 1) {
    const size_t r = box.rank();
    const uint64_t rowLen = box.hi[r - 1] - box.lo[r - 1];
    const uint64_t rowsPerSlab = std::max<uint64_t>(1, (1u << 20) / rowLen);
    std::vector<uint16_t> buf;
    // Iterate over the leading dim in slabs (other dims stay whole within the box).
    const uint64_t inner = vol / (box.hi[0] - box.lo[0]);
    const uint64_t lead = std::max<uint64_t>(1, rowsPerSlab * rowLen / inner);
    for (uint64_t a = box.lo[0]; a < box.hi[0] && s.isOk(); a += lead) {
      Box slab = box;
      slab.lo[0] = a;
      slab.hi[0] = std::min(box.hi[0], a + lead);
      buf.resize(slab.volume());
      s = fillBox(tensor, slab, version, buf);
      if (s.isOk()) XXH3_64bits_update(st, buf.data(), buf.size() * sizeof(uint16_t));
    }
  } else {
    s = fillBox(tensor, box, version, {});
  }
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  if (!s.isOk()) return s;
  return h;
}

}  // namespace tide::workloads
