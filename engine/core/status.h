#pragma once
// Status / Result<T>: tide's error type. Errors carry a code, a message and
// the file:line that created them; exceptions are used only at main() and in
// tests.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tide {

enum class Code : uint8_t {
  kOk = 0,
  kInvalidArgument,  // bad input from a user, a file or a peer
  kNotFound,
  kAlreadyExists,
  kOutOfRange,        // access outside a registered region
  kPermissionDenied,  // wrong access key, missing privileges
  kUnavailable,       // peer gone, device missing, connection refused
  kTimeout,
  kResourceExhausted,
  kFailedPrecondition,
  kDataLoss,  // checksum mismatch, truncated file, torn data
  kCancelled,
  kUnimplemented,  // feature not compiled in on this build
  kInternal,
};

const char* codeName(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message, const char* file = "", int line = 0);

  static Status ok() { return Status(); }
  bool isOk() const { return state_ == nullptr; }
  explicit operator bool() const { return isOk(); }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  const std::string& message() const;
  // "code: message (file:line)"
  std::string toString() const;
  // Adds context in front of the message: "context: message".
  Status withContext(const std::string& context) const;

  Status(const Status& o) : state_(o.state_ ? new State(*o.state_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) {
      delete state_;
      state_ = o.state_ ? new State(*o.state_) : nullptr;
    }
    return *this;
  }
  Status(Status&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  Status& operator=(Status&& o) noexcept {
    std::swap(state_, o.state_);
    return *this;
  }
  ~Status() { delete state_; }

 private:
  struct State {
    Code code;
    std::string message;
    const char* file;
    int line;
  };
  State* state_ = nullptr;  // null means OK: an OK status costs one pointer
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit on purpose
  Result(Status status) : v_(std::move(status)) {}  // NOLINT
  bool isOk() const { return v_.index() == 0; }
  explicit operator bool() const { return isOk(); }
  const Status& status() const {
    static const Status kOkStatus;
    return isOk() ? kOkStatus : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

// Thrown only at the outermost layer (main, tests) by orThrow().
struct StatusError : std::exception {
  explicit StatusError(Status s) : status(std::move(s)), text(status.toString()) {}
  const char* what() const noexcept override { return text.c_str(); }
  Status status;
  std::string text;
};

inline void orThrow(const Status& s) {
  if (!s.isOk()) throw StatusError(s);
}
template <typename T>
T orThrow(Result<T> r) {
  if (!r.isOk()) throw StatusError(r.status());
  return std::move(r).value();
}

}  // namespace tide

#define TIDE_ERROR(code, msg) ::tide::Status((code), (msg), __FILE__, __LINE__)

#define TIDE_CONCAT_INNER(a, b) a##b
#define TIDE_CONCAT(a, b) TIDE_CONCAT_INNER(a, b)

#define TIDE_RETURN_IF_ERROR(expr)       \
  do {                                   \
    ::tide::Status tide_s_ = (expr);     \
    if (!tide_s_.isOk()) return tide_s_; \
  } while (0)

#define TIDE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.isOk()) return tmp.status();            \
  lhs = std::move(tmp).value()

#define TIDE_ASSIGN_OR_RETURN(lhs, expr) \
  TIDE_ASSIGN_OR_RETURN_IMPL(TIDE_CONCAT(tide_r_, __LINE__), lhs, expr)
