#include "workloads/toml_fields.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace tide::workloads::detail {

Status TomlFields::error(std::string_view key, const std::string& what) const {
  return TIDE_ERROR(Code::kInvalidArgument, origin_ + ": '" + std::string(key) + "' " + what);
}

Status TomlFields::getU64(std::string_view key, uint64_t& out, uint64_t max, bool required) {
  seen_.emplace(key);
  const toml::node* n = t_.get(key);
  if (!n) return required ? error(key, "is missing") : Status::ok();
  auto v = n->value_exact<int64_t>();
  if (!v) return error(key, "must be an integer");
  if (*v < 0) return error(key, "must not be negative (got " + std::to_string(*v) + ")");
  if (static_cast<uint64_t>(*v) > max) {
    return error(key, "is too large (" + std::to_string(*v) + " > " + std::to_string(max) + ")");
  }
  out = static_cast<uint64_t>(*v);
  return Status::ok();
}

Status TomlFields::getInt(std::string_view key, int& out, int max, bool required) {
  uint64_t v = static_cast<uint64_t>(out);
  TIDE_RETURN_IF_ERROR(getU64(key, v, static_cast<uint64_t>(max), required));
  out = static_cast<int>(v);
  return Status::ok();
}

Status TomlFields::getDouble(std::string_view key, double& out, bool required) {
  seen_.emplace(key);
  const toml::node* n = t_.get(key);
  if (!n) return required ? error(key, "is missing") : Status::ok();
  auto v = n->value<double>();  // accepts integers too
  if (!v) return error(key, "must be a number");
  if (!std::isfinite(*v)) return error(key, "must be finite");
  out = *v;
  return Status::ok();
}

Status TomlFields::getBool(std::string_view key, bool& out) {
  seen_.emplace(key);
  const toml::node* n = t_.get(key);
  if (!n) return Status::ok();
  auto v = n->value_exact<bool>();
  if (!v) return error(key, "must be true or false");
  out = *v;
  return Status::ok();
}

Status TomlFields::getString(std::string_view key, std::string& out, bool required) {
  seen_.emplace(key);
  const toml::node* n = t_.get(key);
  if (!n) return required ? error(key, "is missing") : Status::ok();
  auto v = n->value_exact<std::string>();
  if (!v) return error(key, "must be a string");
  out = *v;
  return Status::ok();
}

Status TomlFields::rejectUnknown() const {
  for (const auto& [k, v] : t_) {
    if (!seen_.count(k.str())) return error(k.str(), "is not a known key");
  }
  return Status::ok();
}

namespace {

// toml++ 3.3 reaches an unreachable branch (undefined behaviour) when it
// tests U+00A1..U+0499 or U+FB26..U+FEFE for whitespace (found by
// fuzz_toml). tide's TOML files are ASCII, so those characters are refused
// before parsing.
bool mishandled(unsigned cp) {
  return (cp >= 0xa1 && cp <= 0x499) || (cp >= 0xfb26 && cp <= 0xfefe);
}

Status rejectUnsafeCodePoints(std::string_view text, std::string_view origin) {
  int line = 1;
  bool lineStart = true;  // only blanks (or the byte-order mark) so far on this line
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == '\n') ++line;
    // TOML allows no raw control characters but tab and newlines; toml++ 3.3
    // trips an assertion (undefined behaviour with NDEBUG) on some, e.g. "[\0".
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f) {
      return TIDE_ERROR(Code::kInvalidArgument, std::string(origin) + ":" + std::to_string(line) +
                                                    ": control character " + std::to_string(b) +
                                                    " is not allowed");
    }
    // A table header "[" / "[[" must open with a key: toml++ 3.3 asserts
    // otherwise (e.g. "[[#").
    const bool bom = i < 3 && text.substr(0, 3) == "\xef\xbb\xbf";
    if (b == '[' && lineStart) {
      size_t j = i + 1;
      if (j < text.size() && text[j] == '[') ++j;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
      const char k = j < text.size() ? text[j] : '\n';
      if (!(std::isalnum(static_cast<unsigned char>(k)) || k == '_' || k == '-' || k == '"' ||
            k == '\'')) {
        return TIDE_ERROR(Code::kInvalidArgument, std::string(origin) + ":" + std::to_string(line) +
                                                      ": a table header must start with a key");
      }
    }
    lineStart = b == '\n' || ((b == ' ' || b == '\t' || bom) && lineStart);
    unsigned cp = 0;
    size_t len = 0;
    if ((b & 0xe0) == 0xc0) {
      cp = b & 0x1fu;
      len = 2;
    } else if ((b & 0xf0) == 0xe0) {
      cp = b & 0x0fu;
      len = 3;
    } else {
      continue;  // ASCII, 4-byte sequences (above U+FFFF) and stray bytes are safe
    }
    if (i + len > text.size()) continue;
    bool ok = true;
    for (size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      ok = ok && (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3fu);
    }
    if (ok && mishandled(cp)) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", cp);
      return TIDE_ERROR(Code::kInvalidArgument, std::string(origin) + ":" + std::to_string(line) +
                                                    ": character " + hex +
                                                    " is not supported (use ASCII)");
    }
  }
  return Status::ok();
}

}  // namespace

Result<toml::table> parseToml(std::string_view text, std::string_view origin) {
  TIDE_RETURN_IF_ERROR(rejectUnsafeCodePoints(text, origin));
  toml::parse_result r = toml::parse(text, origin);
  if (!r) {
    const auto& e = r.error();
    return TIDE_ERROR(Code::kInvalidArgument, std::string(origin) + ":" +
                                                  std::to_string(e.source().begin.line) + ":" +
                                                  std::to_string(e.source().begin.column) + ": " +
                                                  std::string(e.description()));
  }
  return std::move(r).table();
}

}  // namespace tide::workloads::detail
