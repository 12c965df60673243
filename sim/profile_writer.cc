#include "sim/profile_writer.h"

#include <cstdio>

namespace tide::sim {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  // TOML needs a digit after the point and takes 1e-05 as a float.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string profileToToml(const CostProfile& p) {
  std::string out = "# Cost profile (docs/formats/profile.md), written by tide sim calibrate.\n";
  out += "name = " + quoted(p.name) + "\n";
  out += "stack = " + quoted(p.stack) + "\n";
  out += "version = " + quoted(p.version) + "\n";
  for (const CostConstant& c : p.constants) {
    const std::string unit = c.unit.empty() ? "s" : c.unit;
    auto unitScale = profileUnitSeconds(unit);
    double scale = unitScale.isOk() ? *unitScale : 1.0;
    out += "\n[" + c.key + "]\n";
    out += "value = " + number(c.seconds / scale) + "\n";
    out += "unit = " + quoted(unit) + "\n";
    if (c.hasRange()) {
      out += "low = " + number(c.lowSeconds / scale) + "\n";
      out += "high = " + number(c.highSeconds / scale) + "\n";
    }
    out += "label = " + quoted(constantLabelName(c.label)) + "\n";
    if (!c.command.empty()) out += "command = " + quoted(c.command) + "\n";
    if (!c.rows.empty()) {
      out += "rows = [";
      for (size_t i = 0; i < c.rows.size(); ++i) out += (i ? ", " : "") + quoted(c.rows[i]);
      out += "]\n";
    }
    if (!c.residuals.empty()) {
      out += "residuals = [";  // predicted / published - 1, per row of rows
      for (size_t i = 0; i < c.residuals.size(); ++i)
        out += (i ? ", " : "") + number(c.residuals[i]);
      out += "]\n";
    }
    out += "source = " + quoted(c.source) + "\n";
  }
  return out;
}

}  // namespace tide::sim
