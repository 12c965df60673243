// measureChanges: replays the AdamW steps for every (or a fixed sample of)
// element(s) of every tensor once, counting bf16 changes between consecutive
// versions. One pass costs steps x elements AdamW updates.

#include <algorithm>
#include <atomic>
#include <thread>

#include "workloads/rng.h"
#include "workloads/weights.h"

namespace tide::workloads {

namespace {

constexpr size_t kChunk = 4096;

// idx (exact runs that record indices): per step, the changed flat indices.
void measureTensor(const SyntheticWeights& w, uint32_t t, int steps, uint64_t sample,
                   ChangeStats& out, std::vector<std::vector<uint32_t>>* idx) {
  const TensorSpec& ts = w.inventory().tensors[t];
  const uint64_t numel = ts.numel();
  const uint64_t n = sample == 0 ? numel : std::min(sample, numel);
  const size_t nt = w.inventory().tensors.size();
  out.checked[t] = n;
  std::vector<uint64_t> flat(kChunk);
  std::vector<float> master(kChunk), m(kChunk), v(kChunk), dir(kChunk);
  std::vector<uint16_t> prev(kChunk);
  std::vector<uint8_t> ever(kChunk);
  std::vector<uint32_t> changed(static_cast<size_t>(steps), 0);
  uint64_t everCount = 0;
  const AdamSchedule& sched = w.schedule(t);
  const uint64_t seed = w.config().seed;
  for (uint64_t off = 0; off < n; off += kChunk) {
    const size_t c = static_cast<size_t>(std::min<uint64_t>(kChunk, n - off));
    for (size_t j = 0; j < c; ++j) {
      // Exact: every element. Sampled: evenly strided, offset half a stride.
      flat[j] = n == numel
                    ? off + j
                    : static_cast<uint64_t>((static_cast<long double>(off + j) + 0.5L) * numel / n);
    }
    w.initialMaster(t, flat.data(), c, master.data());
    w.directions(t, flat.data(), c, dir.data());
    std::fill(m.begin(), m.begin() + c, 0.0f);
    std::fill(v.begin(), v.begin() + c, 0.0f);
    std::fill(ever.begin(), ever.begin() + c, 0);
    for (size_t j = 0; j < c; ++j) prev[j] = toBf16(master[j]);
    for (int s = 1; s <= steps; ++s) {
      const auto& st = sched.steps[s - 1];
      if (!st.active) continue;
      adamStep(w.config(), streamKey(seed, t, static_cast<uint64_t>(s), kStreamGrad), st,
               flat.data(), dir.data(), c, master.data(), m.data(), v.data());
      uint32_t k = 0;
      auto* record = idx ? &(*idx)[static_cast<size_t>(s - 1)] : nullptr;
      for (size_t j = 0; j < c; ++j) {
        const uint16_t b = toBf16(master[j]);
        const bool ch = b != prev[j];
        k += ch;
        ever[j] |= ch;
        prev[j] = b;
        if (record && ch) record->push_back(static_cast<uint32_t>(flat[j]));
      }
      changed[s - 1] += k;
    }
    for (size_t j = 0; j < c; ++j) everCount += ever[j];
  }
  for (int s = 0; s < steps; ++s) out.changedSampled[static_cast<size_t>(s) * nt + t] = changed[s];
  out.everChanged[t] = everCount;
}

}  // namespace

Result<ChangeStats> measureChanges(const SyntheticWeights& w, int steps, uint64_t samplePerTensor,
                                   int threads, bool recordIndices) {
  if (steps < 0 || steps > w.maxVersion()) {
    return TIDE_ERROR(Code::kOutOfRange, "steps " + std::to_string(steps) + " outside 0.." +
                                             std::to_string(w.maxVersion()));
  }
  const auto& inv = w.inventory();
  if (samplePerTensor == 0) {
    for (const auto& t : inv.tensors) {
      if (t.numel() >= (1ull << 32)) {
        return TIDE_ERROR(Code::kInvalidArgument,
                          "exact change counts need tensors under 2^32 elements (" + t.name +
                              "); use a sample or --scale");
      }
    }
  }
  ChangeStats cs;
  cs.steps = steps;
  cs.exact = samplePerTensor == 0;
  cs.samplePerTensor = samplePerTensor;
  const size_t nt = inv.tensors.size();
  cs.checked.assign(nt, 0);
  cs.everChanged.assign(nt, 0);
  cs.changedSampled.assign(static_cast<size_t>(steps) * nt, 0);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Largest tensors first would balance better; tensors are many and similar, so a shared counter
  // suffices.
  const bool record = recordIndices && samplePerTensor == 0;
  std::vector<std::vector<std::vector<uint32_t>>> indices(record ? nt : 0);  // [tensor][step]
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t t = next++; t < nt; t = next++) {
      std::vector<std::vector<uint32_t>>* idx = nullptr;
      if (record) {
        indices[t].resize(static_cast<size_t>(steps));
        idx = &indices[t];
      }
      measureTensor(w, static_cast<uint32_t>(t), steps, samplePerTensor, cs, idx);
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (record) {
    // Step-major, then tensor: the order of /delta/changed.
    cs.indexOffsets.reserve(static_cast<size_t>(steps) * nt + 1);
    cs.indexOffsets.push_back(0);
    for (int s = 0; s < steps; ++s) {
      for (size_t t = 0; t < nt; ++t) {
        auto& v = indices[t][static_cast<size_t>(s)];
        cs.changedIndices.insert(cs.changedIndices.end(), v.begin(), v.end());
        cs.indexOffsets.push_back(cs.changedIndices.size());
        std::vector<uint32_t>().swap(v);
      }
    }
  }
  // A sample that covers the whole tensor is exact for it.
  if (!cs.exact) {
    bool all = true;
    for (size_t t = 0; t < nt; ++t) all = all && cs.checked[t] == inv.tensors[t].numel();
    cs.exact = all;
  }
  return cs;
}

}  // namespace tide::workloads
