#include "engine/sync/delta/delta_frame.h"

#include <xxhash.h>

#include <cstring>

namespace tide::sync {
namespace {

constexpr uint32_t kFrameMagic = 0x31464474;  // "tDF1"

#pragma pack(push, 1)
struct FrameHeader {
  uint32_t magic;
  uint32_t items;
  uint64_t fromVersion;
  uint64_t toVersion;
  uint64_t bodyBytes;  // item bitmap + blocks
  uint64_t bodyHash;   // xxh3 of the body
};
#pragma pack(pop)

}  // namespace

Result<FrameStats> encodeFrame(std::span<const TensorVersions> tensors,
                               const std::vector<std::vector<uint32_t>>& items,
                               uint64_t fromVersion, uint64_t toVersion,
                               const DeltaOptions& options, std::vector<uint8_t>& out) {
  FrameStats st;
  st.items = items.size();
  std::vector<uint8_t> body((items.size() + 7) / 8, 0);
  std::vector<uint8_t> blocks;
  for (size_t it = 0; it < items.size(); ++it) {
    // Quick identity check first: an untouched expert is compared once and costs one bit.
    bool changed = false;
    for (uint32_t t : items[it]) {
      if (t >= tensors.size())
        return TIDE_ERROR(Code::kInvalidArgument, "item lists tensor " + std::to_string(t) +
                                                      " of " + std::to_string(tensors.size()));
      const auto& tv = tensors[t];
      st.elements += tv.next.size() / tv.elemBytes;
      st.inputBytes += tv.next.size();
      if (tv.old.size() != tv.next.size() ||
          std::memcmp(tv.old.data(), tv.next.data(), tv.old.size()) != 0)
        changed = true;
    }
    if (!changed) continue;
    body[it / 8] |= static_cast<uint8_t>(1u << (it % 8));
    ++st.changedItems;
    for (uint32_t t : items[it]) {
      const auto& tv = tensors[t];
      TIDE_ASSIGN_OR_RETURN(DeltaStats ds,
                            encodeDelta(tv.old, tv.next, tv.elemBytes, options, blocks));
      st.changed += ds.changed;
      st.byEncoding[static_cast<int>(ds.encoding)]++;
    }
  }
  body.insert(body.end(), blocks.begin(), blocks.end());
  FrameHeader h{kFrameMagic, static_cast<uint32_t>(items.size()),  fromVersion, toVersion,
                body.size(), XXH3_64bits(body.data(), body.size())};
  const auto* hp = reinterpret_cast<const uint8_t*>(&h);
  out.insert(out.end(), hp, hp + sizeof h);
  out.insert(out.end(), body.begin(), body.end());
  st.encodedBytes = sizeof h + body.size();
  return st;
}

Status applyFrame(std::span<const uint8_t> frame, std::span<const std::span<uint8_t>> targets,
                  const std::vector<std::vector<uint32_t>>& items, uint64_t expectFrom,
                  uint64_t expectTo) {
  FrameHeader h;
  if (frame.size() < sizeof h) return TIDE_ERROR(Code::kDataLoss, "delta frame truncated");
  std::memcpy(&h, frame.data(), sizeof h);
  if (h.magic != kFrameMagic) return TIDE_ERROR(Code::kDataLoss, "not a delta frame (bad magic)");
  if (h.fromVersion != expectFrom || h.toVersion != expectTo)
    return TIDE_ERROR(Code::kFailedPrecondition,
                      "delta frame is v" + std::to_string(h.fromVersion) + "->v" +
                          std::to_string(h.toVersion) + ", expected v" +
                          std::to_string(expectFrom) + "->v" + std::to_string(expectTo));
  if (h.items != items.size())
    return TIDE_ERROR(Code::kInvalidArgument, "delta frame has " + std::to_string(h.items) +
                                                  " items, caller has " +
                                                  std::to_string(items.size()));
  if (h.bodyBytes != frame.size() - sizeof h)
    return TIDE_ERROR(Code::kDataLoss, "delta frame truncated or padded: body " +
                                           std::to_string(frame.size() - sizeof h) + " of " +
                                           std::to_string(h.bodyBytes) + " bytes");
  std::span<const uint8_t> body = frame.subspan(sizeof h);
  if (XXH3_64bits(body.data(), body.size()) != h.bodyHash)
    return TIDE_ERROR(Code::kDataLoss, "delta frame corrupt (checksum mismatch)");
  const size_t bitmapBytes = (items.size() + 7) / 8;
  if (body.size() < bitmapBytes) return TIDE_ERROR(Code::kDataLoss, "delta frame bitmap truncated");

  // Pass 1: match every block to its target, check sizes, payload and base (no writes).
  struct Step {
    std::span<const uint8_t> block;
    uint32_t tensor;
  };
  std::vector<Step> steps;
  size_t pos = bitmapBytes;
  for (size_t it = 0; it < items.size(); ++it) {
    if (!(body[it / 8] & (1u << (it % 8)))) continue;
    for (uint32_t t : items[it]) {
      if (t >= targets.size())
        return TIDE_ERROR(Code::kInvalidArgument, "item names a missing target");
      TIDE_ASSIGN_OR_RETURN(DeltaStats ds, inspectDelta(body.subspan(pos)));
      if (ds.inputBytes != targets[t].size())
        return TIDE_ERROR(Code::kInvalidArgument,
                          "delta for tensor " + std::to_string(t) + " has the wrong size");
      std::span<const uint8_t> block = body.subspan(pos, ds.encodedBytes);
      auto ok = checkDelta(block, targets[t]);
      if (!ok.isOk()) return ok.withContext("tensor " + std::to_string(t));
      steps.push_back({block, t});
      pos += ds.encodedBytes;
    }
  }
  if (pos != body.size()) return TIDE_ERROR(Code::kDataLoss, "delta frame has trailing bytes");
  // Pass 2: apply; every block and base was checked above, so no target is
  // written unless all of them can be.
  for (const auto& s : steps) {
    auto r = applyDelta(s.block, targets[s.tensor], /*checked=*/true);
    if (!r.isOk()) return r.status().withContext("tensor " + std::to_string(s.tensor));
  }
  return Status::ok();
}

}  // namespace tide::sync
