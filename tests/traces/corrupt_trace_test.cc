// Files that are valid HDF5 but break the trace schema: each must give one
// clear error, never a crash.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "traces/generator.h"
#include "traces/trace_file.h"

namespace tide::traces {
namespace {

std::string corruptPath(const std::string& name) {
  return ::testing::TempDir() + "tide_corrupt_" + std::to_string(::getpid()) + "_" + name;
}

void replaceDataset(hid_t file, const char* path, hid_t type, const std::vector<hsize_t>& dims,
                    const void* data) {
  H5Ldelete(file, path, H5P_DEFAULT);
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t ds = H5Dcreate2(file, path, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  H5Dclose(ds);
  H5Sclose(space);
}

// Writes a good trace, applies `mutate` to it with raw HDF5, and expects readTrace to fail
// with a message containing `expect`.
void expectRejected(const std::function<void(hid_t, const TraceData&)>& mutate,
                    const std::string& expect) {
  GenerateOptions o;
  o.model = "tiny-moe";
  o.steps = 3;
  o.threads = 1;
  o.rollout.samplesPerStep = 4;
  TraceData d = orThrow(generateTrace(o));
  const std::string path = corruptPath("c.h5");
  ASSERT_TRUE(writeTrace(path, d).isOk());
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  mutate(f, d);
  H5Fclose(f);
  auto r = readTrace(path);
  ASSERT_FALSE(r.isOk()) << expect;
  EXPECT_NE(r.status().message().find(expect), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  std::remove(path.c_str());
}

TEST(CorruptTrace, WrongSchemaVersion) {
  expectRejected(
      [](hid_t f, const TraceData&) {
        H5Adelete(f, "schema_version");
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(f, "schema_version", H5T_NATIVE_INT64, sp, H5P_DEFAULT, H5P_DEFAULT);
        int64_t v = 99;
        H5Awrite(a, H5T_NATIVE_INT64, &v);
        H5Aclose(a);
        H5Sclose(sp);
      },
      "schema version 99");
}

TEST(CorruptTrace, NotATrace) {
  expectRejected([](hid_t f, const TraceData&) { H5Adelete(f, "schema"); }, "not a tide trace");
}

TEST(CorruptTrace, NanRoutingCounts) {
  expectRejected(
      [](hid_t f, const TraceData& d) {
        std::vector<double> v(d.routing.counts.size(), std::numeric_limits<double>::quiet_NaN());
        replaceDataset(
            f, "/routing/counts", H5T_NATIVE_DOUBLE,
            {hsize_t(d.routing.steps), hsize_t(d.routing.moeLayers), hsize_t(d.routing.experts)},
            v.data());
      },
      "must hold integers");
}

TEST(CorruptTrace, WrongDeltaShape) {
  expectRejected(
      [](hid_t f, const TraceData& d) {
        std::vector<uint32_t> v(d.tensors.size() * 2, 0);
        replaceDataset(f, "/delta/changed", H5T_NATIVE_UINT32, {2, hsize_t(d.tensors.size())},
                       v.data());
      },
      "shape");
}

TEST(CorruptTrace, ChangedExceedsChecked) {
  expectRejected(
      [](hid_t f, const TraceData& d) {
        std::vector<uint32_t> v(d.tensors.size() * 3, 0xffffffffu);
        replaceDataset(f, "/delta/changed", H5T_NATIVE_UINT32, {3, hsize_t(d.tensors.size())},
                       v.data());
      },
      "exceeds");
}

TEST(CorruptTrace, MissingGroup) {
  expectRejected([](hid_t f, const TraceData&) { H5Ldelete(f, "/rollout", H5P_DEFAULT); },
                 "missing group rollout");
}

TEST(CorruptTrace, NanRolloutTimes) {
  expectRejected(
      [](hid_t f, const TraceData&) {
        std::vector<double> v(12, std::nan(""));
        replaceDataset(f, "/rollout/end_s", H5T_NATIVE_DOUBLE, {3, 4}, v.data());
      },
      "non-finite");
}

TEST(CorruptTrace, IndexOffsetsDisagreeWithCounts) {
  expectRejected(
      [](hid_t f, const TraceData& d) {
        std::vector<uint64_t> v = d.delta.indexOffsets;
        ASSERT_GT(v.size(), 2u);
        v[1] += 1;  // first cell claims one more change than /delta/changed
        replaceDataset(f, "/delta/index_offsets", H5T_NATIVE_UINT64, {hsize_t(v.size())}, v.data());
      },
      "disagrees with /delta/changed");
}

TEST(CorruptTrace, IndexOutsideTensor) {
  expectRejected(
      [](hid_t f, const TraceData& d) {
        std::vector<uint32_t> v = d.delta.changedIndices;
        ASSERT_FALSE(v.empty());
        v.back() = 0xffffffffu;
        replaceDataset(f, "/delta/indices", H5T_NATIVE_UINT32, {hsize_t(v.size())}, v.data());
      },
      "out of range");
}

}  // namespace
}  // namespace tide::traces
