#pragma once
// Changed-fraction figures of a trace: per tensor kind and per routed expert,
// with their 95 % error bounds when the counts come from a sample.

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace.h"

namespace tide::traces {

struct KindChange {
  std::string kind;
  uint64_t tensors = 0;
  uint64_t params = 0;
  double changedPerStep = 0;        // mean over steps of the parameter-weighted changed fraction
  double minStep = 0, maxStep = 0;  // range of that fraction over steps
  double everChanged = 0;           // parameter-weighted fraction changed in any step
  // Worst-case (p = 1/2) binomial 95 % half-width of one step's figure:
  // 1.96 * 0.5 * sqrt(sum_t w_t^2 / n_t), w_t = numel_t / params, n_t the
  // elements checked in tensor t. 0 when exact.
  double halfWidth95 = 0;
};

// Routed experts, one cell per (step, MoE layer, expert); an expert's gate,
// up and down projections are pooled.
struct ExpertChange {
  uint64_t cells = 0;
  uint64_t idleCells = 0;  // cells whose expert got no tokens that step
  double idleChanged = 0;  // mean changed fraction of idle cells (0: skipped by the optimizer)
  double activeMean = 0;   // over cells with tokens
  double p10 = 0, median = 0, p90 = 0, max = 0;
  double cellHalfWidth95 = 0;  // worst-case 95 % half-width of one cell (0 when exact)
};

struct ChangeSummary {
  bool exact = false;
  uint64_t samplePerTensor = 0;
  std::vector<KindChange> kinds;  // kinds present, in TensorKind order
  KindChange total;               // the whole model
  ExpertChange experts;           // cells == 0 for dense models
};

ChangeSummary summarizeChanges(const TraceData& d);
// A table in Markdown (the format of docs/workloads.md).
std::string formatChangeSummary(const ChangeSummary& s);

}  // namespace tide::traces
