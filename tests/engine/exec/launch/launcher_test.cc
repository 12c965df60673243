#include "engine/exec/launch/launcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "engine/core/clock.h"

namespace tide::exec {
namespace {

// Captures the launcher's two output streams in temporary files.
struct Captured {
  Captured() {
    char o[] = "/tmp/tide-launch-outXXXXXX";
    char e[] = "/tmp/tide-launch-errXXXXXX";
    out = ::mkstemp(o);
    err = ::mkstemp(e);
    outPath = o;
    errPath = e;
  }
  ~Captured() {
    ::close(out);
    ::close(err);
    ::unlink(outPath.c_str());
    ::unlink(errPath.c_str());
  }
  static std::string read(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string stdoutText() const { return read(outPath); }
  std::string stderrText() const { return read(errPath); }
  int out, err;
  std::string outPath, errPath;
};

LaunchOptions options(int n, std::vector<std::string> cmd, const Captured& c) {
  LaunchOptions o;
  o.ranks = n;
  o.command = std::move(cmd);
  o.outFd = c.out;
  o.errFd = c.err;
  o.killGraceSeconds = 1;
  return o;
}

TEST(Launcher, RanksMeetThroughTheStoreAndOutputIsPrefixed) {
  Captured c;
  int rc = orThrow(launch(options(3, {TIDE_STORE_RANK_HELPER, "ok"}, c)));
  std::string out = c.stdoutText();
  EXPECT_EQ(0, rc) << out << c.stderrText();
  for (int r = 0; r < 3; ++r) {
    std::string p = "[rank " + std::to_string(r) + "] ";
    EXPECT_NE(std::string::npos, out.find(p + "rank " + std::to_string(r) + " of 3 met all\n"))
        << out;
    EXPECT_NE(std::string::npos, out.find(p + "partial line without newline\n")) << out;
  }
}

TEST(Launcher, EnvironmentPerRankWithOneToken) {
  Captured c;
  int rc = orThrow(launch(options(
      2, {"sh", "-c", "echo $TIDE_RANK/$TIDE_WORLD_SIZE $TIDE_RUN_TOKEN $TIDE_MASTER_ADDR"}, c)));
  EXPECT_EQ(0, rc);
  std::string out = c.stdoutText();
  auto token = [&](int r) {
    std::string p = "[rank " + std::to_string(r) + "] " + std::to_string(r) + "/2 ";
    auto at = out.find(p);
    EXPECT_NE(std::string::npos, at) << out;
    return at == std::string::npos ? std::string() : out.substr(at + p.size(), 32);
  };
  EXPECT_EQ(token(0), token(1));
  EXPECT_EQ(32u, token(0).size());
  EXPECT_NE(std::string::npos, out.find("127.0.0.1"));
}

TEST(Launcher, FirstFailureStopsTheOthersAndPropagates) {
  Captured c;
  Stopwatch sw;
  int rc = orThrow(launch(options(3, {TIDE_STORE_RANK_HELPER, "fail"}, c)));
  EXPECT_EQ(3, rc);
  EXPECT_LT(sw.seconds(), 15);  // ranks 0 and 2 would wait 20 s at the barrier
  std::string err = c.stderrText();
  EXPECT_NE(std::string::npos, err.find("[rank 1] rank 1 failing on purpose")) << err;
  EXPECT_NE(std::string::npos, err.find("rank 1 exited with code 3")) << err;
}

TEST(Launcher, KilledBySignalAndMissingCommand) {
  Captured c;
  int rc =
      orThrow(launch(options(2, {"sh", "-c", "[ $TIDE_RANK = 1 ] && kill -9 $$; sleep 30"}, c)));
  EXPECT_EQ(128 + 9, rc);
  auto missing = launch(options(2, {"/nonexistent/tide-no-such-program"}, c));
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(std::string::npos, missing.status().message().find("cannot start"));
  EXPECT_FALSE(launch(options(0, {"true"}, c)).isOk());
  EXPECT_FALSE(launch(options(1, {}, c)).isOk());
}

TEST(Launcher, InterruptStopsEveryRank) {
  Captured c;
  Stopwatch sw;
  auto f = std::async(std::launch::async, [&] {
    return launch(options(2, {TIDE_STORE_RANK_HELPER, "hang"}, c));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(::getpid(), SIGINT);  // what Ctrl-C delivers to the launcher
  int rc = orThrow(f.get());
  EXPECT_EQ(130, rc);
  EXPECT_LT(sw.seconds(), 10);
  EXPECT_NE(std::string::npos, c.stderrText().find("interrupted"));
}

TEST(Launcher, InterruptCaughtBeforeTheLaunchStopsIt) {
  // A Ctrl-C the caller's handler caught before launch() installed its own.
  Captured c;
  std::atomic<bool> interrupted{true};
  LaunchOptions o = options(2, {TIDE_STORE_RANK_HELPER, "hang"}, c);
  o.interrupted = &interrupted;
  Stopwatch sw;
  EXPECT_EQ(130, orThrow(launch(o)));
  EXPECT_LT(sw.seconds(), 10);
  EXPECT_NE(std::string::npos, c.stderrText().find("interrupted"));
}

}  // namespace
}  // namespace tide::exec
