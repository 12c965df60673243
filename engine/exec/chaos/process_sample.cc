#include "engine/exec/chaos/process_sample.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "engine/core/errno_status.h"

namespace tide::exec {

Result<ProcessSample> sampleProcess(pid_t pid) {
  ProcessSample s;
  const std::string base = "/proc/" + std::to_string(pid);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir((base + "/fd").c_str()), ::closedir);
  if (!dir) return TIDE_ERRNO("opendir " + base + "/fd");
  while (dirent* e = ::readdir(dir.get())) {
    if (e->d_name[0] != '.') ++s.fds;
  }
  std::ifstream status(base + "/status");
  if (!status) return TIDE_ERROR(Code::kNotFound, "no " + base + "/status");
  std::string line;
  bool rss = false;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      s.rssBytes = std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;  // "VmRSS:   1234 kB"
      rss = true;
    } else if (line.rfind("Threads:", 0) == 0) {
      s.threads = static_cast<int>(std::strtol(line.c_str() + 8, nullptr, 10));
    }
  }
  // A zombie has no VmRSS line: it is gone for this purpose.
  if (!rss) return TIDE_ERROR(Code::kNotFound, "process " + std::to_string(pid) + " has exited");
  return s;
}

}  // namespace tide::exec
