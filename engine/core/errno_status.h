#pragma once
// Turns errno into a Status with the failing call named.

#include <cerrno>
#include <cstring>
#include <string>

#include "engine/core/status.h"

namespace tide {

inline Code codeForErrno(int err) {
  switch (err) {
    case ENOENT:
      return Code::kNotFound;
    case EEXIST:
      return Code::kAlreadyExists;
    case EACCES:
    case EPERM:
      return Code::kPermissionDenied;
    case ETIMEDOUT:
      return Code::kTimeout;
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EADDRNOTAVAIL:
      return Code::kUnavailable;
    case ENOMEM:
    case ENOSPC:
      return Code::kResourceExhausted;
    case EINVAL:
      return Code::kInvalidArgument;
    default:
      return Code::kInternal;
  }
}

}  // namespace tide

#define TIDE_ERRNO(what)                                                                       \
  ::tide::Status(::tide::codeForErrno(errno), std::string(what) + ": " + std::strerror(errno), \
                 __FILE__, __LINE__)
