#pragma once
// One table of a command's options, read two ways. A struct of arguments
// lists its options once, in a `visit(self, v)` template; OptionRegistrar
// turns each entry into a CLI11 option bound to the field, ArgvWriter writes
// each field's current value back as `--name value` (the command line a
// launcher gives every rank of a run). A new option is one line in visit().

#include <CLI/CLI.hpp>
#include <array>
#include <charconv>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace tide::harness {

enum OptionFlags : unsigned {
  kShowDefault = 1u << 0,  // --help shows the default value
  kHidden = 1u << 1,       // not in --help (test-only options)
  kLocal = 1u << 2,        // this process's only: not passed on to the ranks
};

// One name of a choice option: the text on the command line and the typed
// value it stands for. A choice is parsed once, where it is registered; the
// code that uses it compares enums, never strings.
template <class E>
struct Choice {
  const char* name;
  E value;
};
template <class E, size_t N>
using Choices = std::array<Choice<E>, N>;

template <class E, size_t N>
const char* nameOf(const Choices<E, N>& choices, E value) {
  for (const auto& c : choices) {
    if (c.value == value) return c.name;
  }
  return "";
}

// "a, b or c" (`last` = " or "), or "a|b|c" (`sep` = `last` = "|").
template <class E, size_t N>
std::string choiceList(const Choices<E, N>& choices, const char* sep = ", ",
                       const char* last = " or ") {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? last : sep;
    out += choices[i].name;
  }
  return out;
}

class OptionRegistrar {
 public:
  explicit OptionRegistrar(CLI::App* cmd) : cmd_(cmd) {}

  // Options that follow go under this --help heading ("" = the command's own).
  void group(std::string name) { group_ = std::move(name); }

  template <class T>
  CLI::Option* option(const std::string& name, T& value, const std::string& help,
                      unsigned flags = 0) {
    CLI::Option* o = cmd_->add_option(name, value, help);
    if (flags & kShowDefault) o->capture_default_str();
    return finish(o, flags);
  }
  CLI::Option* flag(const std::string& name, bool& value, const std::string& help,
                    unsigned flags = 0) {
    return finish(cmd_->add_flag(name, value, help), flags);
  }
  // Any other text is a usage error naming the choices.
  template <class E, size_t N>
  CLI::Option* choice(const std::string& name, E& value, const Choices<E, N>& choices,
                      const std::string& help, unsigned flags = 0) {
    CLI::Option* o = cmd_->add_option_function<std::string>(
        name,
        [&value, &choices, name](const std::string& text) {
          for (const auto& c : choices) {
            if (text == c.name) {
              value = c.value;
              return;
            }
          }
          throw CLI::ValidationError(name + " must be " + choiceList(choices) + " (got '" + text +
                                     "')");
        },
        help);
    o->type_name(choiceList(choices, "|", "|"));
    if (flags & kShowDefault) o->default_str(nameOf(choices, value));
    return finish(o, flags);
  }

 private:
  CLI::Option* finish(CLI::Option* o, unsigned flags) {
    if (flags & kHidden) {
      o->group("");
    } else if (!group_.empty()) {
      o->group(group_);
    }
    return o;
  }

  CLI::App* cmd_;
  std::string group_;
};

// Writes the options' values as arguments that parse back to the same
// values. An empty string is an option not given (none of the forwarded
// string options takes "" as a value), so it is left out.
class ArgvWriter {
 public:
  void group(const std::string&) {}

  template <class T>
  void option(const std::string& name, const T& value, const std::string&, unsigned flags = 0) {
    if (flags & kLocal) return;
    std::string text = toText(value);
    if (text.empty()) return;
    argv_.push_back(name);
    argv_.push_back(std::move(text));
  }
  void flag(const std::string& name, bool value, const std::string&, unsigned flags = 0) {
    if (!(flags & kLocal) && value) argv_.push_back(name);
  }
  template <class E, size_t N>
  void choice(const std::string& name, E value, const Choices<E, N>& choices, const std::string&,
              unsigned flags = 0) {
    if (flags & kLocal) return;
    argv_.push_back(name);
    argv_.push_back(nameOf(choices, value));
  }

  std::vector<std::string>& argv() { return argv_; }

  static std::string toText(const std::string& s) { return s; }
  template <class T>
  static std::string toText(const T& v) {
    static_assert(std::is_arithmetic_v<T>, "ArgvWriter: add a toText() for this option type");
    // Shortest text that reads back to the same value (doubles too).
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }

 private:
  std::vector<std::string> argv_;
};

// Every option's value as text, in the table's order (flags "true" or
// "false"): what two sets of arguments differ in.
class OptionValues {
 public:
  void group(const std::string&) {}
  template <class T>
  void option(const std::string& name, const T& value, const std::string&, unsigned = 0) {
    values_.emplace_back(name, ArgvWriter::toText(value));
  }
  void flag(const std::string& name, bool value, const std::string&, unsigned = 0) {
    values_.emplace_back(name, value ? "true" : "false");
  }
  template <class E, size_t N>
  void choice(const std::string& name, E value, const Choices<E, N>& choices, const std::string&,
              unsigned = 0) {
    values_.emplace_back(name, nameOf(choices, value));
  }
  const std::vector<std::pair<std::string, std::string>>& values() const { return values_; }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

}  // namespace tide::harness
