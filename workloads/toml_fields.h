#pragma once
// Strict field readers over a parsed TOML table, for tide's TOML inputs (the
// workloads files and the simulator's scenarios): every
// key must be known, integers non-negative and in range, types exact, so a
// typo or an impossible value is one clear error.

#include <toml++/toml.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace tide::workloads::detail {

class TomlFields {
 public:
  TomlFields(const toml::table& t, std::string origin) : t_(t), origin_(std::move(origin)) {}

  Status getU64(std::string_view key, uint64_t& out, uint64_t max, bool required);
  Status getInt(std::string_view key, int& out, int max, bool required);
  Status getDouble(std::string_view key, double& out, bool required);
  Status getBool(std::string_view key, bool& out);
  Status getString(std::string_view key, std::string& out, bool required);
  // The node under `key` (null when absent), marked as known; for values
  // that take more than one type or a caller's own parsing.
  const toml::node* get(std::string_view key);
  // Rejects keys that no get*() asked for.
  Status rejectUnknown() const;
  Status error(std::string_view key, const std::string& what) const;

 private:
  const toml::table& t_;
  std::string origin_;
  std::set<std::string, std::less<>> seen_;
};

// The error of a TOML document that parsed but says something invalid:
// "origin: what", kInvalidArgument.
Status invalidAt(std::string_view origin, const std::string& what);

// Parses text into a table, or one error with origin:line[:column]. Only
// tide's line-based TOML subset is accepted (see toml_fields.cc).
Result<toml::table> parseToml(std::string_view text, std::string_view origin);

}  // namespace tide::workloads::detail
