#include "engine/sync/designs/design_steps.h"

namespace tide::sync::designs {

StepId gpuSend(Ctx& x, uint32_t src, uint32_t dst, double bytes, uint16_t stage) {
  plan::Step s;
  s.kind = plan::StepKind::kBroadcast;
  s.rank = src;
  s.group = x.g.group({dst});
  s.bytes = bytes;
  s.lanes = 1;
  s.chunkBytes = static_cast<double>(x.o.chunkBytes);
  s.count = 1;
  s.stage = stage;
  return x.g.add(s);
}

std::vector<uint32_t> inferRanks(const Ctx& x) {
  std::vector<uint32_t> v;
  for (int i = 0; i < x.il.worldSize(); ++i) v.push_back(x.inferBase + i);
  return v;
}

StepId engineLoad(Ctx& x, uint32_t rank, double tensors, double kept, double scanSteps,
                  double keptBytes, StepId after, uint16_t stage) {
  StepId ops = miles::hostOps(x, rank, miles::loaderOps(tensors, kept, miles::kEngineCopyOps),
                              scanSteps, stage);
  x.g.dep(after, ops);
  StepId copy = x.g.add(miles::sizedStep(plan::StepKind::kDevicePass, rank, keptBytes, stage));
  x.g.dep(after, copy);
  StepId end = x.g.join();
  x.g.dep(ops, end);
  x.g.dep(copy, end);
  return end;
}

}  // namespace tide::sync::designs
