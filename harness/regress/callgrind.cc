#include "harness/regress/callgrind.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "engine/core/clock.h"
#include "harness/regress/run_logged.h"

namespace tide::harness::regress {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "fn=(12) name" defines id 12; "fn=(12)" refers to it. Returns the name.
std::string compressedName(const std::string& rest,
                           std::unordered_map<std::string, std::string>& ids) {
  if (rest.empty() || rest[0] != '(') return rest;
  const auto close = rest.find(')');
  if (close == std::string::npos) return rest;
  const std::string id = rest.substr(0, close + 1);
  if (close + 1 < rest.size()) {
    std::string name = rest.substr(close + 1);
    if (!name.empty() && name[0] == ' ') name.erase(0, 1);
    ids[id] = name;
    return name;
  }
  auto it = ids.find(id);
  return it == ids.end() ? id : it->second;
}

}  // namespace

std::string findInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    std::string cand = dir + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return "";
}

Result<KernelCount> readCallgrindDump(const std::string& path) {
  std::ifstream in(path);
  if (!in) return TIDE_ERROR(Code::kNotFound, "cannot read callgrind dump " + path);
  KernelCount k;
  k.dump = path;
  std::unordered_map<std::string, std::string> fnIds;
  std::string line, fn;
  bool callCost = false;  // the line after calls= is the call's inclusive cost
  double totals = -1, summary = -1;
  const std::string trigger = "desc: Trigger: Client Request: ";
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const char c = line[0];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '*') {
      std::istringstream ls(line);
      std::string pos, last;
      ls >> pos;
      while (ls >> last) {
      }
      if (!callCost && !last.empty()) k.functions[fn] += std::strtod(last.c_str(), nullptr);
      callCost = false;
      continue;
    }
    callCost = false;
    if (line.rfind("fn=", 0) == 0) {
      fn = compressedName(line.substr(3), fnIds);
    } else if (line.rfind("cfn=", 0) == 0) {
      compressedName(line.substr(4), fnIds);  // may define a name used later
    } else if (line.rfind("calls=", 0) == 0) {
      callCost = true;
    } else if (line.rfind("creator: ", 0) == 0) {
      k.creator = line.substr(9);
    } else if (line.rfind(trigger, 0) == 0) {
      k.kernel = line.substr(trigger.size());
    } else if (line.rfind("totals:", 0) == 0) {
      totals = std::strtod(line.c_str() + 7, nullptr);
    } else if (line.rfind("summary:", 0) == 0) {
      summary = std::strtod(line.c_str() + 8, nullptr);
    } else if (line.rfind("events:", 0) == 0 && line.find("Ir") == std::string::npos) {
      return TIDE_ERROR(Code::kInvalidArgument, path + ": no Ir event (" + line + ")");
    }
  }
  k.instructions = totals >= 0 ? totals : summary;
  if (k.instructions < 0)
    return TIDE_ERROR(Code::kInvalidArgument, path + ": no totals/summary line");
  return k;
}

Result<CallgrindRun> runCallgrind(const CallgrindOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(o.workDir, ec);
  if (ec) return TIDE_ERROR(Code::kUnavailable, "cannot create " + o.workDir + ": " + ec.message());
  Stopwatch sw;
  std::vector<std::string> kernels = o.kernels;
  if (kernels.empty()) {  // all the driver has
    const std::string log = o.workDir + "/list.log";
    TIDE_ASSIGN_OR_RETURN(int code, runLogged({o.driver, "--list"}, log, 60));
    std::istringstream in(readFile(log));
    if (code != 0)
      return TIDE_ERROR(Code::kInternal, o.driver + " --list exited " + std::to_string(code));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) kernels.push_back(line.substr(0, line.find(' ')));
  }
  CallgrindRun run;
  // One process per kernel: what ran before (the heap it left) would move
  // another kernel's count (malloc's paths, memcmp's alignment: up to 2 %).
  for (const auto& kernel : kernels) {
    const std::string out = o.workDir + "/" + kernel + ".callgrind";
    const std::string log = o.workDir + "/" + kernel + ".log";
    const std::string vlogPath = o.workDir + "/" + kernel + ".valgrind.log";
    for (const auto& e : fs::directory_iterator(o.workDir, ec))
      if (e.path().filename().string().rfind(kernel + ".callgrind", 0) == 0)
        fs::remove(e.path(), ec);
    std::vector<std::string> argv = {o.valgrind,
                                     "--tool=callgrind",
                                     "--instr-atstart=no",
                                     "--callgrind-out-file=" + out,
                                     "--log-file=" + vlogPath,
                                     o.driver,
                                     kernel};
    TIDE_ASSIGN_OR_RETURN(int code, runLogged(argv, log, o.timeoutSeconds));
    const std::string output = readFile(log);
    run.driverOutput += output;
    if (code != 0) {
      std::string vlog = readFile(vlogPath);
      if (vlog.size() > 2000) vlog = "..." + vlog.substr(vlog.size() - 2000);
      return TIDE_ERROR(Code::kInternal, "valgrind --tool=callgrind " + o.driver + " " + kernel +
                                             " exited " + std::to_string(code) + ":\n" + output +
                                             vlog);
    }
    // The kernel's dump is <out>.1 (<out> itself is the empty one at exit).
    TIDE_ASSIGN_OR_RETURN(KernelCount k, readCallgrindDump(out + ".1"));
    if (k.kernel != kernel)
      return TIDE_ERROR(Code::kInternal, out + ".1 holds '" + k.kernel + "', not " + kernel);
    run.kernels.push_back(std::move(k));
  }
  run.planted = run.driverOutput.find("(PLANTED)") != std::string::npos;
  run.seconds = sw.seconds();
  return run;
}

}  // namespace tide::harness::regress
