#include "engine/exec/executor/rank_schedule.h"

#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "engine/core/units.h"
#include "engine/exec/executor/fp8_blocks.h"

namespace tide::exec {

using plan::MoveKind;
using plan::Space;

namespace {

// Runs that copy `box` between two blocks of one dtype.
void copyRuns(const plan::RegionBox& box, const Placed& src, const Placed& dst,
              std::vector<Run>& out) {
  if (src.dtype == workloads::DType::kFP8E4M3) return fp8Runs(box, src, dst, out);
  boxRuns(box, src, dst, workloads::bytesOf(src.dtype), out);
}

}  // namespace

Result<RankSchedule> RankSchedule::build(const plan::TransferPlan& p,
                                         const std::vector<RankLayout>& layouts, uint32_t rank,
                                         uint64_t chunkBytes) {
  if (rank >= p.ranks.size() || layouts.size() != p.ranks.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "exec: rank " + std::to_string(rank) +
                                                  " not in the plan's " +
                                                  std::to_string(p.ranks.size()) + " ranks");
  }
  RankSchedule s;
  s.rank = rank;
  if (chunkBytes == 0) {
    chunkBytes = p.params.contains("chunk_bytes") ? p.params["chunk_bytes"].get<uint64_t>() : kMiB;
  }
  s.chunkBytes = std::max<uint64_t>(chunkBytes, 1);

  std::vector<uint32_t> nextUnit(p.ranks.size(), 0);
  // (src, dst, stage, bucket) -> index into s.out (own groups) or -1.
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;
  std::map<Key, int64_t> groups;
  std::map<std::pair<uint32_t, uint32_t>, size_t> localOf;  // (stage, bucket) -> task

  for (const auto& m : p.moves) {
    const bool local = m.src == m.dst;
    if (local) {
      if (m.src != rank) continue;
      const bool quantize =
          m.srcDtype == workloads::DType::kBF16 && m.dstDtype == workloads::DType::kFP8E4M3;
      if (m.srcDtype != m.dstDtype && !quantize) {
        return TIDE_ERROR(Code::kUnimplemented,
                          std::string("exec: conversion ") + workloads::dtypeName(m.srcDtype) +
                              " -> " + workloads::dtypeName(m.dstDtype) + " is not supported");
      }
      TIDE_ASSIGN_OR_RETURN(auto src, layouts[rank].find(m.srcSpace, m.tensor, m.box, m.bucket));
      TIDE_ASSIGN_OR_RETURN(auto dst, layouts[rank].find(m.dstSpace, m.tensor, m.box, m.bucket));
      auto [it, fresh] = localOf.try_emplace({m.stage, m.bucket}, s.local.size());
      if (fresh) {
        LocalTask t;
        t.stage = m.stage;
        t.bucket = m.bucket;
        t.srcSpace = m.srcSpace;
        t.dstSpace = m.dstSpace;
        s.local.push_back(std::move(t));
      }
      LocalTask& t = s.local[it->second];
      if (t.srcSpace != m.srcSpace || t.dstSpace != m.dstSpace) {
        return TIDE_ERROR(Code::kUnimplemented,
                          "exec: local moves of one (stage, bucket) span several spaces");
      }
      if (quantize) {
        t.quantize.push_back(Quantize{m.box, m.tensor, src, dst});
      } else {
        copyRuns(m.box, *src, *dst, t.runs);
      }
      t.bytes += m.bytes;
      continue;
    }
    const Key key{m.src, m.dst, m.stage, m.bucket};
    auto [it, fresh] = groups.try_emplace(key, -1);
    const bool hop = m.kind == MoveKind::kBroadcastHop;
    if (fresh) {
      uint32_t chunks = 1;
      std::pair<uint64_t, uint64_t> srcExt{}, dstExt{};
      if (hop) {
        TIDE_ASSIGN_OR_RETURN(srcExt, layouts[m.src].bucketExtent(m.bucket));
        TIDE_ASSIGN_OR_RETURN(dstExt, layouts[m.dst].bucketExtent(m.bucket));
        if (srcExt.second != dstExt.second) {
          return TIDE_ERROR(Code::kInternal, "exec: bucket sizes differ between ranks");
        }
        chunks = static_cast<uint32_t>(
            std::max<uint64_t>(1, (srcExt.second + s.chunkBytes - 1) / s.chunkBytes));
      }
      const uint32_t firstUnit = nextUnit[m.dst];
      nextUnit[m.dst] += chunks;
      if (m.dst == rank) {
        for (uint32_t c = 0; c < chunks; ++c) {
          s.in.push_back(InUnit{m.stage, m.bucket, c, hop, static_cast<int32_t>(m.src)});
        }
      }
      if (m.src == rank) {
        it->second = static_cast<int64_t>(s.out.size());
        for (uint32_t c = 0; c < chunks; ++c) {
          OutGroup g;
          g.stage = m.stage;
          g.bucket = m.bucket;
          g.chunk = c;
          g.hop = hop;
          g.peer = static_cast<int32_t>(m.dst);
          g.unit = firstUnit + c;
          g.srcSpace = m.srcSpace;
          g.dstSpace = m.dstSpace;
          if (hop) {
            const uint64_t off = c * s.chunkBytes;
            const uint64_t len = std::min(s.chunkBytes, srcExt.second - off);
            g.runs.push_back(Run{srcExt.first + off, dstExt.first + off, len});
            g.bytes = len;
          }
          s.out.push_back(std::move(g));
        }
      }
    } else if (hop) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "exec: duplicate broadcast hop of bucket " + std::to_string(m.bucket));
    }
    if (m.src != rank || hop) continue;
    if (m.srcDtype != m.dstDtype) {
      return TIDE_ERROR(Code::kUnimplemented, "exec: a network move may not convert dtypes");
    }
    TIDE_ASSIGN_OR_RETURN(auto src, layouts[m.src].find(m.srcSpace, m.tensor, m.box, m.bucket));
    TIDE_ASSIGN_OR_RETURN(auto dst, layouts[m.dst].find(m.dstSpace, m.tensor, m.box, m.bucket));
    OutGroup& g = s.out[static_cast<size_t>(it->second)];
    if (g.srcSpace != m.srcSpace || g.dstSpace != m.dstSpace) {
      return TIDE_ERROR(Code::kUnimplemented,
                        "exec: moves of one (stage, bucket, peer) span several spaces");
    }
    copyRuns(m.box, *src, *dst, g.runs);
    g.bytes += m.bytes;
  }
  return s;
}

Status LocalTask::run(const plan::TransferPlan& p, const uint8_t* src, uint8_t* dst) const {
  for (const Run& r : runs) std::memcpy(dst + r.dstOffset, src + r.srcOffset, r.bytes);
  for (const Quantize& q : quantize) {
    TIDE_RETURN_IF_ERROR(
        quantizeBlocks(q.box, p.tensors[q.tensor].shape, *q.dst, dst, bf16Blocks(*q.src, src)));
  }
  return Status::ok();
}

}  // namespace tide::exec
