#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "traces/event_writer.h"
#include "traces/generator.h"
#include "traces/replayer.h"
#include "traces/trace_file.h"

namespace tide::traces {
namespace {

std::string tempPath(const std::string& name) {
  return ::testing::TempDir() + "tide_trace_" + std::to_string(::getpid()) + "_" + name;
}

GenerateOptions tinyOptions() {
  GenerateOptions o;
  o.model = "tiny-moe";
  o.steps = 5;
  o.threads = 2;
  o.rollout.samplesPerStep = 16;
  return o;
}

TEST(Trace, RoundTrip) {
  TraceData d = orThrow(generateTrace(tinyOptions()));
  ASSERT_TRUE(d.delta.exact);
  d.events.push_back(Event{0.5, 1.5, 0, 3, 4096, 1, 1, EventPath::kRdma});
  const std::string path = tempPath("rt.h5");
  ASSERT_TRUE(writeTrace(path, d).isOk());
  TraceData r = orThrow(readTrace(path));
  EXPECT_EQ(r.meta.model, "tiny-moe");
  EXPECT_EQ(r.meta.steps, 5);
  EXPECT_EQ(r.tensors.names, d.tensors.names);
  EXPECT_EQ(r.routing.counts, d.routing.counts);
  EXPECT_EQ(r.delta.changedSampled, d.delta.changedSampled);
  EXPECT_EQ(r.delta.checked, d.delta.checked);
  ASSERT_EQ(r.rollout.size(), 5u);
  EXPECT_EQ(r.rollout[2][3].responseTokens, d.rollout[2][3].responseTokens);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].bytes, 4096u);
  EXPECT_EQ(r.events[0].path, EventPath::kRdma);
  EXPECT_NE(describeTrace(r).find("tiny-moe"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Trace, EventWriterAppendsWhileRunning) {
  const std::string path = tempPath("ev.h5");
  ASSERT_TRUE(writeTrace(path, orThrow(generateTrace(tinyOptions()))).isOk());
  {
    auto w = orThrow(EventWriter::open(path, 3));
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(
          w->append(Event{double(i), double(i) + 0.25, i, i + 1, 100u * i, 0, 1, EventPath::kTcp})
              .isOk());
    }
    EXPECT_EQ(w->written(), 9u);  // three flushes of three
    ASSERT_TRUE(w->flush().isOk());
    // A reader sees everything flushed so far.
    EXPECT_EQ(orThrow(readTrace(path)).events.size(), 10u);
  }
  // A fresh events-only file.
  const std::string only = tempPath("only.h5");
  std::remove(only.c_str());
  {
    auto w = orThrow(EventWriter::open(only));
    ASSERT_TRUE(w->append(Event{0, 1, 0, 1, 5, 0, 0, EventPath::kShm}).isOk());
  }                            // destructor flushes
  auto bad = readTrace(only);  // no /meta: not a complete trace
  EXPECT_FALSE(bad.isOk());
  std::remove(path.c_str());
  std::remove(only.c_str());
}

TEST(Trace, ReplayerStepsThrough) {
  const std::string path = tempPath("rp.h5");
  ASSERT_TRUE(writeTrace(path, orThrow(generateTrace(tinyOptions()))).isOk());
  TraceReplayer rp = orThrow(TraceReplayer::open(path));
  int n = 0;
  while (!rp.done()) {
    StepView v = orThrow(rp.next());
    EXPECT_EQ(v.step, ++n);
    EXPECT_GT(v.moeLayers, 0);
    EXPECT_GT(v.changedElements, 0);
    ASSERT_NE(v.rollout, nullptr);
    EXPECT_EQ(v.rollout->size(), 16u);
  }
  EXPECT_EQ(n, 5);
  EXPECT_EQ(rp.next().status().code(), Code::kOutOfRange);
  std::remove(path.c_str());
}

TEST(Trace, BadFilesGiveOneClearError) {
  const std::string good = tempPath("good.h5");
  ASSERT_TRUE(writeTrace(good, orThrow(generateTrace(tinyOptions()))).isOk());
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 4096u);
  auto expectBad = [](const std::string& p, const char* what) {
    auto r = readTrace(p);
    EXPECT_FALSE(r.isOk()) << what;
    if (!r.isOk()) {
      EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    }
  };
  // Truncated at several points.
  for (size_t cut : {size_t{0}, size_t{100}, bytes.size() / 2, bytes.size() - 100}) {
    const std::string p = tempPath("cut.h5");
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    expectBad(p, "truncated");
    std::remove(p.c_str());
  }
  expectBad(tempPath("missing.h5"), "missing");
  // Garbage with an HDF5 signature would still be caught by the library.
  const std::string junk = tempPath("junk.h5");
  std::ofstream(junk) << "this is not a trace";
  expectBad(junk, "junk");
  std::remove(junk.c_str());
  std::remove(good.c_str());
}

}  // namespace
}  // namespace tide::traces
