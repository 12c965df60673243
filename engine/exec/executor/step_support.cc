#include "engine/exec/executor/step_support.h"

namespace tide::exec {

std::string whyNotPerformed(plan::StepKind k) {
  using plan::StepKind;
  switch (k) {
    case StepKind::kJoin:
    case StepKind::kRegister:
      return "";
    case StepKind::kDevicePass:
    case StepKind::kDeviceToHost:
      return "no GPU: the executor holds every shard in host memory";
    case StepKind::kAllGather:
    case StepKind::kBroadcast:
      return "no GPU: group collectives run on NCCL, which needs one";
    case StepKind::kHostOps:
    case StepKind::kControlRound:
    case StepKind::kPostprocess:
    case StepKind::kHostWrite:
      return "a modelled system's step: tide's executor has none of that kind";
  }
  return "unknown step kind";
}

}  // namespace tide::exec
