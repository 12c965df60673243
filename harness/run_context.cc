#include "harness/run_context.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "tide_git_revision.h"

#ifndef TIDE_BUILD_TYPE
#define TIDE_BUILD_TYPE "unknown"
#endif
#ifndef TIDE_VERSION
#define TIDE_VERSION "unknown"
#endif

namespace tide::harness {
namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

struct CpuInfo {
  std::string model = "unknown";
  int cores = 0;  // distinct (physical id, core id); 0 when /proc/cpuinfo lacks them
};

CpuInfo cpuInfo() {
  CpuInfo c;
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical = "0";
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && c.model == "unknown") c.model = value;
    if (key == "physical id") physical = value;
    if (key == "core id") cores.insert({physical, value});
  }
  c.cores = static_cast<int>(cores.size());
  return c;
}

std::string utcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

nlohmann::json runContext() {
  nlohmann::json j;
  char host[256] = {0};
  j["host"] = ::gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  CpuInfo cpu = cpuInfo();
  j["cpu_model"] = cpu.model;
  long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  j["cpus"] = online > 0 ? online : 0;
  j["cpu_cores"] = cpu.cores > 0 ? cpu.cores : j["cpus"].get<long>();
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) == 3)
    j["load_average"] = {load[0], load[1], load[2]};
  else
    j["load_average"] = nullptr;
  struct utsname u {};
  j["kernel"] = ::uname(&u) == 0 ? std::string(u.sysname) + " " + u.release + " " + u.machine
                                 : std::string("unknown");
  j["compiler"] = compiler();
  j["build_type"] = TIDE_BUILD_TYPE;
#ifdef NDEBUG
  j["assertions"] = false;
#else
  j["assertions"] = true;
#endif
  j["git_revision"] = TIDE_GIT_REVISION;
  j["git_modified"] = TIDE_GIT_DIRTY;
  j["tide_version"] = TIDE_VERSION;
  j["date"] = utcNow();
  return j;
}

}  // namespace tide::harness
