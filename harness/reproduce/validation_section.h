#pragma once
// The simulator against real runs in `tide reproduce` (full set): the part
// "validate_matrix" runs `tide validate --matrix` on the shipped matrix
// (scenarios/validation/matrix.toml), and the report shows every row (real,
// simulated, error) and the scatter plot of real against simulated.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "harness/reproduce/part.h"
#include "harness/reproduce/report.h"

namespace tide::harness::reproduce {

inline constexpr const char* kMatrixPart = "validate_matrix";
inline constexpr const char* kMatrixFigure = "validation_matrix.png";

// The part (full set only; `skip`: why the emulated cluster cannot run here).
Part matrixPart(const SetOptions& o, const std::string& skip);

// The matrix's tide.validate.matrix/1 document, also of a run whose rows
// partly failed; null when the part wrote none.
nlohmann::json matrixJsonOf(const ReportInput& in);

// The section of REPORT.md ("" when matrixJsonOf is null), with the figure
// when the plots made it.
std::string matrixSection(const nlohmann::json& matrix,
                          const std::vector<std::pair<std::string, std::string>>& pngs);

}  // namespace tide::harness::reproduce
