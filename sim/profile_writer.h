#pragma once
// Writes a cost profile back as TOML (docs/formats/profile.md): what `tide
// sim calibrate` produces, every constant with its label, range, rows and
// residuals. Comments of the file it was read from are not kept.

#include <string>

#include "sim/cost_profile.h"

namespace tide::sim {

std::string profileToToml(const CostProfile& p);

}  // namespace tide::sim
