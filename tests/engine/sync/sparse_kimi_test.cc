// Sparse vs full update bytes for a Kimi-K2-shaped model at full tensor size:
// RL steps from the workload generator (AdamW on FP32 masters, BF16 cast,
// routed experts skipped when they get no tokens) encoded with the delta
// frame codec, applied and checked bit-exact. Every tensor of the dense
// layer 0, the MoE layer 1 (all 384 experts) and the global tensors is
// sampled as a leading row block of the full-size tensor; the whole-model
// figure scales each tensor kind's measured bytes per element by that kind's
// parameter count. Prints one JSON line per step and a summary.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "engine/core/clock.h"
#include "engine/sync/delta/delta_frame.h"
#include "engine/sync/disk_delta_reader.h"
#include "engine/sync/disk_delta_writer.h"
#include "workloads/model.h"
#include "workloads/routing.h"
#include "workloads/weights.h"

namespace tide::sync {
namespace {

using namespace tide::workloads;

constexpr int kSteps = 4;
constexpr uint64_t kDenseTarget = 1 << 18;   // elements sampled per dense tensor
constexpr uint64_t kExpertTarget = 1 << 13;  // per routed-expert tensor

Box leadingRows(const TensorSpec& t, uint64_t target) {
  Box b = Box::full(t.shape);
  if (t.shape.size() < 2) return b;
  uint64_t cols = 1;
  for (size_t d = 1; d < t.shape.size(); ++d) cols *= t.shape[d];
  b.hi[0] = std::min<uint64_t>(t.shape[0], std::max<uint64_t>(1, target / cols));
  return b;
}

TEST(SparseKimi, DeltaFramesAreTwentyTimesSmallerThanFullAndBitExact) {
  auto spec = orThrow(loadModel("kimi-k2"));
  ModelInventory inv = buildInventory(spec);
  RoutingConfig rc;
  RlConfig cfg;
  SyntheticWeights w(inv, generateRouting(spec, rc, kSteps), cfg, kSteps);

  std::vector<uint32_t> picked;
  for (uint32_t t = 0; t < inv.tensors.size(); ++t) {
    int layer = inv.tensors[t].layer;
    if (layer == -1 || layer == 0 || layer == spec.firstDenseLayers) picked.push_back(t);
  }
  std::vector<VersionedBox> boxes;
  std::vector<std::vector<uint16_t>> cur(picked.size()), next(picked.size());
  std::map<std::pair<int, int>, std::vector<uint32_t>> expertItems;
  std::vector<std::vector<uint32_t>> items;
  uint64_t sampled = 0;
  for (uint32_t i = 0; i < picked.size(); ++i) {
    const auto& t = inv.tensors[picked[i]];
    Box b = leadingRows(t, t.kind == TensorKind::kRoutedExpert ? kExpertTarget : kDenseTarget);
    boxes.emplace_back(w, picked[i], b);
    cur[i].resize(b.volume());
    next[i].resize(b.volume());
    boxes.back().current(cur[i]);
    sampled += b.volume();
    if (t.expert >= 0)
      expertItems[{t.layer, t.expert}].push_back(i);
    else
      items.push_back({i});
  }
  for (auto& [key, it] : expertItems) items.push_back(it);

  // The same steps through the disk-delta strategy: one trainer rank writes
  // a base (version 0) and then delta files; one reader follows.
  char tmpl[] = "/tmp/tide-sparse-kimi-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  DiskDeltaOptions dd;
  dd.dir = tmpl;
  dd.baseEvery = kSteps + 1;
  DiskDeltaSlice slice;
  for (auto& c : cur) {
    slice.tensorBytes.push_back(2 * c.size());
    slice.elemBytes.push_back(2);
  }
  slice.items = items;
  auto u8 = [](std::vector<uint16_t>& v) {
    return std::span<uint8_t>(reinterpret_cast<uint8_t*>(v.data()), 2 * v.size());
  };
  auto writeAndFollow =
      [&](DiskDeltaWriter& wr, DiskDeltaReader& rd, std::vector<std::vector<uint16_t>>& src,
          std::vector<std::vector<uint16_t>>& dst, std::optional<uint64_t>& at, uint64_t v) {
        std::vector<std::span<const uint8_t>> in;
        for (auto& t : src) in.push_back(u8(t));
        Stopwatch sw;
        auto st = wr.writeStep(v, in);
        ASSERT_TRUE(st.isOk()) << st.status().toString();
        ASSERT_TRUE(commitVersion(dd, v, st->baseVersion, {st->record}).isOk());
        double writeS = sw.seconds();
        std::vector<std::span<uint8_t>> out;
        for (auto& t : dst) out.push_back(u8(t));
        sw.reset();
        auto rs = rd.update(out, at, v);
        ASSERT_TRUE(rs.isOk()) << rs.toString();
        double readS = sw.seconds();
        ASSERT_TRUE(dst == src);
        std::printf(
            "{\"strategy\":\"disk-delta\",\"version\":%llu,\"file\":\"%s\",\"disk_bytes\":%llu,"
            "\"slice_bytes\":%llu,\"write_commit_s\":%.4f,\"read_apply_s\":%.4f,\"uring\":%s}\n",
            (unsigned long long)v, st->record.kind == DiskDeltaKind::kBase ? "base" : "delta",
            (unsigned long long)st->record.bytes, (unsigned long long)st->sliceBytes, writeS, readS,
            uringAvailable() ? "true" : "false");
      };
  DiskDeltaWriter ddWriter(dd, 0, slice);
  DiskDeltaReader ddReader(dd, 0, slice);
  std::vector<std::vector<uint16_t>> readerCopy(cur.size());
  for (size_t i = 0; i < cur.size(); ++i) readerCopy[i].resize(cur[i].size());
  std::optional<uint64_t> readerAt;
  writeAndFollow(ddWriter, ddReader, cur, readerCopy, readerAt, 0);

  // Per kind: sampled elements and encoded bytes over all steps.
  std::map<TensorKind, std::pair<double, double>> perKind;
  uint64_t totalFull = 0, totalSparse = 0, totalChanged = 0, totalElems = 0;
  for (int s = 1; s <= kSteps; ++s) {
    std::vector<TensorVersions> tv(picked.size());
    for (uint32_t i = 0; i < picked.size(); ++i) {
      ASSERT_TRUE(boxes[i].advance(next[i]).isOk());
      tv[i] = {{reinterpret_cast<const uint8_t*>(cur[i].data()), 2 * cur[i].size()},
               {reinterpret_cast<const uint8_t*>(next[i].data()), 2 * next[i].size()},
               2};
    }
    std::vector<uint8_t> frame;
    Stopwatch sw;
    auto fs = encodeFrame(tv, items, s - 1, s, {}, frame);
    double encodeS = sw.seconds();
    ASSERT_TRUE(fs.isOk()) << fs.status().toString();
    // Per kind, each tensor encoded alone (same codec, no frame sharing).
    for (uint32_t i = 0; i < picked.size(); ++i) {
      std::vector<uint8_t> block;
      auto ds = encodeDelta(tv[i].old, tv[i].next, 2, {}, block);
      ASSERT_TRUE(ds.isOk());
      auto& k = perKind[inv.tensors[picked[i]].kind];
      k.first += double(cur[i].size());
      k.second += double(ds->encodedBytes);
    }
    sw.reset();
    std::vector<std::span<uint8_t>> targets;
    for (auto& c : cur) targets.emplace_back(reinterpret_cast<uint8_t*>(c.data()), 2 * c.size());
    ASSERT_TRUE(applyFrame(frame, targets, items, s - 1, s).isOk());
    double applyS = sw.seconds();
    for (uint32_t i = 0; i < picked.size(); ++i) ASSERT_EQ(cur[i], next[i]) << "tensor " << i;
    writeAndFollow(ddWriter, ddReader, cur, readerCopy, readerAt, static_cast<uint64_t>(s));
    std::printf(
        "{\"model\":\"kimi-k2\",\"step\":%d,\"sampled_elements\":%llu,\"bytes_on_wire_full\":%llu,"
        "\"bytes_on_wire_sparse\":%llu,\"changed_fraction\":%.6f,\"compression_ratio\":%.2f,"
        "\"changed_items\":%llu,\"items\":%llu,\"encode_gbps\":%.3f,\"apply_gbps\":%.3f}\n",
        s, (unsigned long long)sampled, (unsigned long long)fs->inputBytes,
        (unsigned long long)fs->encodedBytes, fs->changedFraction(), fs->compressionRatio(),
        (unsigned long long)fs->changedItems, (unsigned long long)fs->items,
        fs->inputBytes / encodeS / 1e9, fs->inputBytes / applyS / 1e9);
    totalFull += fs->inputBytes;
    totalSparse += fs->encodedBytes;
    totalChanged += fs->changed;
    totalElems += fs->elements;
  }
  double ratio = double(totalFull) / double(totalSparse);
  // Whole model: each kind's measured bytes per element times its parameters.
  double modelSparse = 0;
  for (auto& [kind, v] : perKind) {
    ASSERT_GT(v.first, 0);
    modelSparse += v.second / v.first * double(inv.paramsOfKind(kind));
    std::printf(
        "{\"kind\":\"%s\",\"params\":%llu,\"sampled_elements_per_step\":%.0f,"
        "\"sparse_bytes_per_element\":%.4f,\"compression_ratio\":%.2f}\n",
        kindName(kind), (unsigned long long)inv.paramsOfKind(kind), v.first / kSteps,
        v.second / v.first, 2.0 * v.first / v.second);
  }
  double modelFull = double(inv.bytes(false));
  std::printf(
      "{\"model\":\"kimi-k2\",\"steps\":%d,\"changed_fraction\":%.6f,\"compression_ratio\":%.2f,"
      "\"model_bytes_full\":%.0f,\"model_bytes_sparse_per_step\":%.0f,\"model_ratio\":%.2f}\n",
      kSteps, double(totalChanged) / double(totalElems), ratio, modelFull, modelSparse,
      modelFull / modelSparse);
  std::filesystem::remove_all(tmpl);
  EXPECT_GE(ratio, 20.0) << "sparse frames must carry >= 20x fewer bytes than full weights";
  EXPECT_GE(modelFull / modelSparse, 20.0);
}

}  // namespace
}  // namespace tide::sync
