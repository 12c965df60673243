#pragma once
// Runs a validation matrix: every row for real (`tide sync --plan` on the
// emulated cluster, each a subprocess of its own with a deadline, so one
// failing row is reported and the rest go on) and in the simulator on the
// same plan, then the errors over all rows (schema tide.validate.matrix/1).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/sim/host_probes.h"
#include "harness/validation/matrix_file.h"
#include "sim/unit_validation.h"

namespace tide::harness {

struct MatrixOptions {
  std::string tide;        // the tide binary the rows run
  std::string workDir;     // plans, real results and logs of the rows
  bool quick = false;      // only the rows marked quick
  std::string only;        // only rows whose name contains this
  std::string traceDir;    // a timeline per row (real and simulated units)
  bool keepPlans = false;  // plans can be tens of MB each
};

struct MatrixResult {
  MatrixRow row;
  std::string status = "failed";  // ok | skipped | failed
  std::string reason;
  std::vector<double> realSteps;  // seconds
  double realSeconds = 0;         // median step
  double simSeconds = 0, boundSeconds = 0, error = 0;
  std::string bottleneck;
  uint64_t planBytes = 0;
  // The plan's FP8 conversions timed on one core (conversion_probe.h):
  // their rate, 0 when none were.
  double convertUnitsBps = 0;
  std::optional<sim::UnitErrors> units;
  double wallSeconds = 0;
};

struct MatrixSummary {
  size_t total = 0, ok = 0, skipped = 0, failed = 0;
  double median = 0, p90 = 0, max = 0;  // |error| over the rows that ran
  // Configurations (per backend) whose strategies' real times differ by
  // more than 10 %: how many, and those where the simulator's faster one
  // is another.
  size_t winnerChecks = 0;
  std::vector<std::string> wrongWinner;
};

// Runs the rows (progress on stdout, a line per row). A row that cannot run
// here (no root, no rdma_rxe) is skipped with the reason.
// `host`: this host's figures, measured once before the rows.
std::vector<MatrixResult> runMatrix(const MatrixFile& m, const MatrixOptions& o,
                                    const HostFigures& host);

MatrixSummary summarize(const std::vector<MatrixResult>& rows);

nlohmann::json matrixJson(const MatrixFile& m, const std::vector<MatrixResult>& rows,
                          const MatrixSummary& s, const HostFigures& host);

// The table of rows and the summary lines, as Markdown (for REPORT.md).
std::string matrixMarkdown(const nlohmann::json& matrix);

}  // namespace tide::harness
