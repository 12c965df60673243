#include "engine/sync/register_steps.h"

#include "engine/plan/rank_buffers.h"

namespace tide::sync {

Status addRegisterSteps(plan::TransferPlan& p, uint64_t pageBytes) {
  if (pageBytes == 0) return TIDE_ERROR(Code::kInvalidArgument, "register: page size must be > 0");
  p.params.options.firstUpdate = true;
  p.params.options.pageBytes = pageBytes;
  const auto buffers = plan::rankBuffers(p);
  const uint16_t stage = p.work.stage(plan::kStageRegister);
  for (size_t r = 0; r < buffers.size(); ++r) {
    const uint64_t pages = buffers[r].pages(pageBytes);
    if (pages == 0) continue;
    plan::Step s;
    s.kind = plan::StepKind::kRegister;
    s.rank = static_cast<uint32_t>(r);
    s.count = static_cast<double>(pages);
    s.bytes = static_cast<double>(buffers[r].total());
    s.stage = stage;
    p.work.add(s);
  }
  return Status::ok();
}

}  // namespace tide::sync
