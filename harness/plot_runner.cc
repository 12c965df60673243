#include "harness/plot_runner.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "harness/output_path.h"

namespace tide::harness {

std::string plotsDir() {
  if (const char* d = std::getenv("TIDE_PLOTS_DIR")) return d;
  return std::string(TIDE_SOURCE_DIR) + "/harness/plots";
}

namespace {

// The last non-empty line of a file: a Python traceback ends with the error.
std::string lastLine(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

}  // namespace

Status runPlot(const std::string& script, const nlohmann::json& input, const std::string& outPng) {
  namespace fs = std::filesystem;
  TIDE_RETURN_IF_ERROR(checkOutputPath("plot", outPng));
  fs::path py = fs::path(plotsDir()) / script;
  if (!fs::exists(py)) return TIDE_ERROR(Code::kNotFound, "plot script missing: " + py.string());
  const std::string stem = "tide-plot-" + std::to_string(::getpid());
  fs::path tmp = fs::temp_directory_path() / (stem + ".json");
  fs::path err = fs::temp_directory_path() / (stem + ".err");
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
    // stderr to a file: on failure one line of it is reported, not a traceback.
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) ::dup2(fd, STDERR_FILENO);
    ::execlp(python, python, py.c_str(), tmp.c_str(), outPng.c_str(), nullptr);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::error_code ec;
  fs::remove(tmp, ec);
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::string why;
  if (ok) {
    // Warnings of a successful run still reach the user.
    std::ifstream in(err);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fputs(text.c_str(), stderr);
  } else {
    why = lastLine(err);
  }
  fs::remove(err, ec);
  if (ok) return Status::ok();
  std::string how = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && why.empty())
    why = std::string("cannot run ") + python;
  return TIDE_ERROR(Code::kUnavailable, "plot script " + script + " failed (" + how + ")" +
                                            (why.empty() ? "" : ": " + why));
}

}  // namespace tide::harness
