#include "harness/plot_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tide::harness {

std::string plotsDir() {
  if (const char* d = std::getenv("TIDE_PLOTS_DIR")) return d;
  return std::string(TIDE_SOURCE_DIR) + "/harness/plots";
}

Status runPlot(const std::string& script, const nlohmann::json& input, const std::string& outPng) {
  namespace fs = std::filesystem;
  fs::path py = fs::path(plotsDir()) / script;
  if (!fs::exists(py)) return TIDE_ERROR(Code::kNotFound, "plot script missing: " + py.string());
  fs::path tmp = fs::temp_directory_path() / ("tide-plot-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream f(tmp);
    f << input.dump();
    if (!f) return TIDE_ERROR(Code::kUnavailable, "cannot write " + tmp.string());
  }
  // Debian's python3 carries matplotlib; a python3 earlier on PATH may not.
  const char* python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  pid_t pid = ::fork();
  if (pid < 0) return TIDE_ERROR(Code::kInternal, "fork failed for the plot script");
  if (pid == 0) {
    ::execlp(python, python, py.c_str(), tmp.c_str(), outPng.c_str(), nullptr);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::error_code ec;
  fs::remove(tmp, ec);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return TIDE_ERROR(Code::kInternal, "plot script " + script + " failed (exit " +
                                           std::to_string(WEXITSTATUS(status)) + ")");
  return Status::ok();
}

}  // namespace tide::harness
