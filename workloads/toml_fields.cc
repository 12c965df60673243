#include "workloads/toml_fields.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace tide::workloads::detail {

Status invalidAt(std::string_view origin, const std::string& what) {
  return TIDE_ERROR(Code::kInvalidArgument, std::string(origin) + ": " + what);
}

Status TomlFields::error(std::string_view key, const std::string& what) const {
  return invalidAt(origin_, "'" + std::string(key) + "' " + what);
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

const toml::node* TomlFields::get(std::string_view key) {
  seen_.emplace(key);
  return t_.get(key);
}

Status TomlFields::rejectUnknown() const {
  for (const auto& [k, v] : t_) {
    if (!seen_.count(k.str())) return error(k.str(), "is not a known key");
  }
  return Status::ok();
}

namespace {

// tide's TOML files use a small, line-based subset of TOML: table headers of
// bare (dotted) keys, `key = value` with a number, a boolean, a basic string
// without escapes or a 'literal' string, or a one-line array of those, and
// comments; printable ASCII only. Everything else is refused here, before toml++ sees it:
// toml++ 3.3 (Debian 12) asserts or reaches unreachable branches on many
// malformed inputs (found by fuzz_toml: "c=[}", "[[#", some non-ASCII), so
// only text in this subset, which it parses safely, is handed to it.
class SubsetChecker {
 public:
  SubsetChecker(std::string_view line) : s_(line) {}

  // Why the line is outside the subset, or empty when it is inside.
  std::string check() {
    for (char c : s_) {
      const auto b = static_cast<unsigned char>(c);
      if ((b < 0x20 && c != '\t' && c != '\r') || b >= 0x7f) {
        return "character " + std::to_string(b) + " is not allowed (printable ASCII only)";
      }
    }
    blanks();
    if (done()) return {};
    if (peek() == '[') {
      ++i_;
      const bool array = peek() == '[';
      if (array) ++i_;
      blanks();
      if (!key()) return "a table header must be a bare key, e.g. [cluster]";
      blanks();
      if (!eat(']') || (array && !eat(']'))) return "a table header must end with ]";
      return tail();
    }
    if (!key()) return "expected `key = value`";
    blanks();
    if (!eat('=')) return "expected `=` after the key";
    blanks();
    if (eat('[')) {
      blanks();
      if (!eat(']')) {
        for (;;) {
          if (!scalar()) return "array items must be numbers, booleans or strings";
          blanks();
          if (eat(']')) break;
          if (!eat(',')) return "expected `,` or `]` in the array";
          blanks();
          if (eat(']')) break;
        }
      }
    } else if (!scalar()) {
      return "a value must be a number, true/false, a \"string\" or a one-line [array]";
    }
    return tail();
  }

 private:
  bool done() const { return i_ >= s_.size() || s_[i_] == '#' || s_[i_] == '\r'; }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void blanks() {
    while (peek() == ' ' || peek() == '\t') ++i_;
  }
  static bool bare(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  }
  bool key() {
    do {
      blanks();
      const size_t start = i_;
      while (bare(peek())) ++i_;
      if (i_ == start) return false;
      blanks();
    } while (eat('.'));
    return true;
  }
  bool scalar() {
    if (eat('"')) {  // basic string, no escapes
      while (peek() != '"' && peek() != '\\' && i_ < s_.size()) ++i_;
      return eat('"');
    }
    if (eat('\'')) {  // literal string
      while (peek() != '\'' && i_ < s_.size()) ++i_;
      return eat('\'');
    }
    for (std::string_view word : {"true", "false"}) {
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return !bare(peek());
      }
    }
    // [+-] digits [. digits] [e [+-] digits], underscores between digits.
    eat('+') || eat('-');
    auto digits = [&] {
      const size_t start = i_;
      while (std::isdigit(static_cast<unsigned char>(peek())) ||
             (peek() == '_' && i_ > start && i_ + 1 < s_.size() &&
              std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
        ++i_;
      }
      return i_ > start;
    };
    if (!digits()) return false;
    if (eat('.') && !digits()) return false;
    if (eat('e') || eat('E')) {
      eat('+') || eat('-');
      if (!digits()) return false;
    }
    return !bare(peek()) && peek() != '.';
  }
  std::string tail() {
    blanks();
    return done() ? std::string() : "unexpected text after the value";
  }

  std::string_view s_;
  size_t i_ = 0;
};

Status checkSubset(std::string_view text, std::string_view origin) {
  if (text.substr(0, 3) == "\xef\xbb\xbf") text.remove_prefix(3);  // byte-order mark
  int line = 1;
  for (size_t pos = 0; pos <= text.size(); ++line) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string why = SubsetChecker(text.substr(pos, end - pos)).check();
    if (!why.empty()) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        std::string(origin) + ":" + std::to_string(line) + ": " + why);
    }
    pos = end + 1;
  }
  return Status::ok();
}

}  // namespace

Result<toml::table> parseToml(std::string_view text, std::string_view origin) {
  TIDE_RETURN_IF_ERROR(checkSubset(text, origin));
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
