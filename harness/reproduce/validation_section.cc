#include "harness/reproduce/validation_section.h"

#include <fmt/format.h>

#include "harness/validation/matrix_run.h"

namespace tide::harness::reproduce {

Part matrixPart(const SetOptions& o, const std::string& skip) {
  const std::string d = o.partDir + "/";
  return {kMatrixPart,
          "the simulator against real runs: every row of the validation matrix, real and "
          "simulated on the same plan",
          {o.tide, "validate", "--matrix", o.source + "/scenarios/validation/matrix.toml", "--json",
           d + kMatrixPart + ".json", "--work-dir", d + kMatrixPart},
          900,
          3600,
          skip,
          {{"result", d + kMatrixPart + ".json"}},
          {}};
}

nlohmann::json matrixJsonOf(const ReportInput& in) {
  nlohmann::json doc = partDocument(in, kMatrixPart, /*anyStatus=*/true);
  if (!doc.is_object() || doc.value("schema", "") != "tide.validate.matrix/1") return nullptr;
  return doc;
}

std::string matrixSection(const nlohmann::json& matrix,
                          const std::vector<std::pair<std::string, std::string>>& pngs) {
  if (!matrix.is_object()) return "";
  std::string md =
      "## Simulator against real runs: the validation matrix\n\n"
      "Each row: one configuration of the emulated cluster run for real (`tide sync --plan`, "
      "every byte verified) and in the simulator on the same plan and cluster spec; error = "
      "simulated / real median step - 1. The rows (scenarios/validation/matrix.toml) were "
      "chosen before they were run and no constant is fitted on them; this host's loopback "
      "tcp rate and FP8 conversion rate are measured once before the rows (" +
      fmt::format("{:.3f} GB/s, {:.3f} GB/s per core, {} cores", matrix.value("host_tcp_gbps", 0.0),
                  matrix.value("host_convert_gbps", 0.0), matrix.value("host_cores", 0)) +
      "). The misses and their mechanisms: docs/sim.md.\n\n";
  for (const auto& [file, caption] : pngs) {
    if (file == kMatrixFigure) md += "![" + caption + "](" + file + ")\n\n";
  }
  md += matrixMarkdown(matrix) + "\n";
  return md;
}

}  // namespace tide::harness::reproduce
