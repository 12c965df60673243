#pragma once
// Output-file flags are checked before a run: a path that cannot be written
// should fail in a second with the flag's name, not after minutes of work.

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "engine/core/status.h"

namespace tide::harness {

// OK when `path` (the value of `flag`) can be created or overwritten: its
// directory exists and is writable, and the path itself is no directory.
inline Status checkOutputPath(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  auto bad = [&](const std::string& why) {
    return TIDE_ERROR(Code::kInvalidArgument, flag + " " + path + ": " + why);
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) return bad("is a directory");
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::exists(dir, ec)) return bad("directory " + dir.string() + " does not exist");
  if (!fs::is_directory(dir, ec)) return bad(dir.string() + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return bad("directory " + dir.string() + " is not writable");
  if (fs::exists(path, ec) && ::access(path.c_str(), W_OK) != 0) return bad("is not writable");
  return Status::ok();
}

}  // namespace tide::harness
