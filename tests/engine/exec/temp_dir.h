#pragma once
// A temporary directory for one test, removed with everything in it.

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace tide::exec {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tide-exec-test-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace tide::exec
