#include "engine/core/status.h"

#include <cstring>

namespace tide {

const char* codeName(Code c) {
  switch (c) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kNotFound:
      return "not found";
    case Code::kAlreadyExists:
      return "already exists";
    case Code::kOutOfRange:
      return "out of range";
    case Code::kPermissionDenied:
      return "permission denied";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kTimeout:
      return "timeout";
    case Code::kResourceExhausted:
      return "resource exhausted";
    case Code::kFailedPrecondition:
      return "failed precondition";
    case Code::kDataLoss:
      return "data loss";
    case Code::kCancelled:
      return "cancelled";
    case Code::kUnimplemented:
      return "unimplemented";
    case Code::kInternal:
      return "internal";
  }
  return "unknown";
}

Status::Status(Code code, std::string message, const char* file, int line) {
  if (code == Code::kOk) return;
  state_ = new State{code, std::move(message), file, line};
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::toString() const {
  if (!state_) return "ok";
  std::string out = std::string(codeName(state_->code)) + ": " + state_->message;
  if (state_->file && *state_->file) {
    const char* base = std::strrchr(state_->file, '/');
    out += " (" + std::string(base ? base + 1 : state_->file) + ":" + std::to_string(state_->line) +
           ")";
  }
  return out;
}

Status Status::withContext(const std::string& context) const {
  if (!state_) return *this;
  Status s = *this;
  s.state_->message = context + ": " + s.state_->message;
  return s;
}

}  // namespace tide
