#pragma once
// The data-plane transfer paths measured side by side (tide rollout and the
// benchmark suite), all between two ranks' BatchStores over one transport:
//
//   raw     one-sided READs of the same payload bytes, registered to registered
//           (the ceiling: no pack, no manifest, no checks);
//   tide    put (checksums per the producer's ChecksumPolicy + manifest;
//           "packed" adds one memcpy per field when the batch is not in pool
//           memory) + get into views, verified when checksummed;
//   tide_checksummed  (only when the policy skipped checksums) tide with them;
//   padded  every response padded to the batch's max length (DataProto), put+get;
//   copy    serialize rows into one buffer, copy into registered memory, READ,
//           copy out, deserialize row by row into per-row vectors.
//
// Every timed iteration includes its path's pack and unpack work.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/batch_store.h"

namespace tide::data {

// Per-sample token counts of one rollout batch.
struct RolloutShape {
  std::vector<uint32_t> prompt;
  std::vector<uint32_t> response;
  uint64_t raggedBytes() const;  // prompt i32 + response i32 + log_probs f32 + reward + offsets
  uint64_t paddedBytes() const;  // same fields padded to max lengths + lengths
};

// A rollout batch (prompt, response, log_probs ragged; reward dense) with
// deterministic contents. With a pool, built in one lease of it (registered
// memory, as a rollout worker writing straight into transfer buffers would);
// without, in ordinary heap vectors.
Result<Batch> buildRolloutBatch(const RolloutShape& shape, uint64_t seed, BufferPool* pool);
// Pads response/log_probs/prompt to their max lengths: dense [n, max] columns.
Result<Batch> padRolloutBatch(const Batch& ragged);
// Checks one sampled row of a received batch against the generator.
Status checkRolloutRow(const Batch& b, int64_t row, int64_t sourceRow, uint64_t seed);

struct PathTimes {
  std::string path;
  uint64_t bytes = 0;  // bytes that crossed the transport per iteration
  std::vector<double> seconds;
  std::string skipped;  // non-empty: why not measured
  double median() const;
  double p95() const;
};

struct PathsConfig {
  int reps = 5;
  int warmup = 1;
  uint64_t paddedLimitBytes = 2ull << 30;  // padded path skipped above this
  bool copyPath = true;
};

// Producer is `a` (rank 0), consumer `b` (rank 1); both stores share `kv`.
Result<std::vector<PathTimes>> measurePaths(BatchStore& producer, BatchStore& consumer,
                                            const RolloutShape& shape, const PathsConfig& cfg);

}  // namespace tide::data
