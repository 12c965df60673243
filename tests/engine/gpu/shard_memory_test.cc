// Shard memory without a device: the staging order (bucket bounds, merged
// copies) and the host implementation held to the contract every
// implementation meets (shard_memory_contract.h; the CUDA one runs the same
// checks in gpu_device_test).

#include <gtest/gtest.h>

#include "engine/gpu/host_shard_memory.h"
#include "engine/gpu/staging_plan.h"
#include "tests/engine/gpu/shard_memory_contract.h"

namespace tide::gpu {
namespace {

TEST(GpuStaging, BucketBoundsAndMergedCopies) {
  std::vector<StagedTensor> t = {{0, 0, 100}, {100, 100, 50}, {400, 150, 300}, {700, 450, 10}};
  EXPECT_EQ(bucketBounds(t, 150), (std::vector<size_t>{0, 2, 3, 4}));
  EXPECT_EQ(bucketBounds(t, 1 << 20), (std::vector<size_t>{0, 4}));
  EXPECT_EQ(bucketBounds({}, 10), (std::vector<size_t>{0}));
  const auto m = mergedCopies(t);
  ASSERT_EQ(m.size(), 2u);  // 0+1 adjacent on both sides; 2+3 adjacent too
  EXPECT_EQ(m[0].bytes, 150u);
  EXPECT_EQ(m[1].deviceOffset, 400u);
  EXPECT_EQ(m[1].bytes, 310u);
}

class HostShardMemoryTest : public ::testing::Test {
 protected:
  ContractModel model;
  std::unique_ptr<ShardMemory> m = makeHostShardMemory(model.w);
};

TEST_F(HostShardMemoryTest, FillIsTheGenerator) {
  EXPECT_STREQ(m->kind(), "host");
  checkFill(*m, model);
}
TEST_F(HostShardMemoryTest, StagingRoundTripsPerTensorAndBucketed) {
  checkStaging(*m);
}
TEST_F(HostShardMemoryTest, BucketedStagingLandsWhileTheCallerGoesOn) {
  checkStagingJob(*m);
}
TEST_F(HostShardMemoryTest, ChecksumsOfScatteredRanges) {
  checkChecksums(*m);
}
TEST_F(HostShardMemoryTest, RangesOutsideAShardAreRefused) {
  checkRefusals(*m, model);
}

}  // namespace
}  // namespace tide::gpu
