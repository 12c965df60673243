#include "engine/exec/executor/rank_schedule.h"

#include <cstring>
#include <string>

#include "engine/exec/executor/fp8_blocks.h"

namespace tide::exec {

namespace {

// Runs that copy `box` between two blocks of one dtype.
void copyRuns(const plan::RegionBox& box, const Placed& src, const Placed& dst,
              std::vector<Run>& out) {
  if (src.dtype == workloads::DType::kFP8E4M3) return fp8Runs(box, src, dst, out);
  boxRuns(box, src, dst, workloads::bytesOf(src.dtype), out);
}

}  // namespace

Result<RankSchedule> RankSchedule::build(const plan::TransferPlan& p,
                                         const plan::Schedule& schedule,
                                         const std::vector<RankLayout>& layouts, uint32_t rank) {
  if (rank >= p.ranks.size() || layouts.size() != p.ranks.size() ||
      schedule.unitsOf.size() != p.ranks.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "exec: rank " + std::to_string(rank) +
                                                  " not in the plan's " +
                                                  std::to_string(p.ranks.size()) + " ranks");
  }
  RankSchedule s;
  s.rank = rank;
  s.units = &schedule;
  for (const uint32_t id : schedule.unitsOf[rank]) {
    const plan::Unit& u = schedule.units[id];
    if (u.kind == plan::UnitKind::kHop) {
      TIDE_ASSIGN_OR_RETURN(auto srcExt, layouts[u.rank].bucketExtent(u.bucket));
      TIDE_ASSIGN_OR_RETURN(auto dstExt, layouts[u.peer].bucketExtent(u.bucket));
      if (srcExt.second != u.bytes || dstExt.second != u.bytes) {
        return TIDE_ERROR(Code::kInternal, "exec: bucket " + std::to_string(u.bucket) +
                                               " is laid out at another size than its hop moves");
      }
      for (uint32_t k = 0; k < u.pieces; ++k) {
        OutGroup g{id,         k,          u.stage,   u.bucket, true, static_cast<int32_t>(u.peer),
                   u.slot + k, u.srcSpace, u.dstSpace};
        const uint64_t off = k * u.pieceBytes;
        g.bytes = u.bytesOfPiece(k);
        g.runs.push_back(Run{srcExt.first + off, dstExt.first + off, g.bytes});
        s.out.push_back(std::move(g));
      }
      continue;
    }
    std::vector<Run> runs;
    std::vector<Quantize> quantize;
    for (uint32_t i = u.moveBegin; i < u.moveEnd; ++i) {
      const plan::Move& m = p.moves[schedule.moves[i]];
      const bool toFp8 =
          m.srcDtype == workloads::DType::kBF16 && m.dstDtype == workloads::DType::kFP8E4M3;
      if (m.srcDtype != m.dstDtype && (!u.local() || !toFp8)) {
        return TIDE_ERROR(Code::kUnimplemented,
                          u.local() ? std::string("exec: conversion ") +
                                          workloads::dtypeName(m.srcDtype) + " -> " +
                                          workloads::dtypeName(m.dstDtype) + " is not supported"
                                    : std::string("exec: a network move may not convert dtypes"));
      }
      TIDE_ASSIGN_OR_RETURN(auto src, layouts[u.rank].find(m.srcSpace, m.tensor, m.box, m.bucket));
      TIDE_ASSIGN_OR_RETURN(auto dst, layouts[u.peer].find(m.dstSpace, m.tensor, m.box, m.bucket));
      if (toFp8) {
        quantize.push_back(Quantize{m.box, m.tensor, src, dst});
      } else {
        copyRuns(m.box, *src, *dst, runs);
      }
    }
    if (u.local()) {
      s.local.push_back(LocalTask{id, u.stage, u.bucket, u.srcSpace, u.dstSpace, std::move(runs),
                                  std::move(quantize), u.bytes});
    } else {
      s.out.push_back(OutGroup{id, 0, u.stage, u.bucket, false, static_cast<int32_t>(u.peer),
                               u.slot, u.srcSpace, u.dstSpace, std::move(runs), u.bytes});
    }
  }
  for (const plan::Schedule::Arrival& a : schedule.arrivals[rank]) {
    const plan::Unit& u = schedule.units[a.unit];
    s.in.push_back(InUnit{a.unit, a.piece, u.stage, u.bucket, u.kind == plan::UnitKind::kHop,
                          static_cast<int32_t>(u.rank)});
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
