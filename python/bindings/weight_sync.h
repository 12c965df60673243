#pragma once
// One rank of a weight sync between Python processes: rank 0 the trainer,
// ranks 1..engines the inference engines (one rank each), every rank with
// the same named tensors (numpy arrays over its own memory: a torch
// module's parameters, an engine's copy). The plan (p2p or broadcast) is
// made from the tensors as given, each rank's buffers are registered once,
// and each update() runs one step of tide's executor: the trainer's tensors
// are copied into its registered shard and hashed, the plan's writes land
// in the engines' shards, every engine byte is checked against the
// trainer's digests, and only then copied into the engine's tensors.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/tensor_shards.h"
#include "engine/exec/rank/rank_executor.h"
#include "engine/sync/update_problem.h"
#include "engine/transport/transport.h"
#include "workloads/weights.h"

namespace tide::python {

struct WeightSyncOptions {
  int rank = 0;
  int engines = 1;
  std::string strategy = "p2p";
  std::string backend = "shm";
  std::string name = "weights";  // keys in the store: several syncs may share one
  double timeoutSeconds = 60;    // a step that makes no progress for this long fails
  // Creation: waiting for the other ranks to agree on the tensors and to
  // connect (a worker process may start well after the trainer).
  double connectTimeoutSeconds = 60;
  uint64_t bucketBytes = 0;  // broadcast's bucket; 0: the planner's default
  int streams = 4;
  std::vector<std::string> devices;
};

class WeightSync {
 public:
  // `tensors`: name -> C-contiguous array (writable on an engine); `bf16`:
  // names whose int16 arrays hold bf16. Every rank creates its own at once.
  static std::unique_ptr<WeightSync> create(pybind11::object store, pybind11::dict tensors,
                                            std::vector<std::string> bf16,
                                            WeightSyncOptions options);
  ~WeightSync();

  // One update on every rank: returns this rank's step figures.
  pybind11::dict update();
  // The plan as JSON text (tide.plan schema).
  std::string planJson() const;
  const WeightSyncOptions& options() const { return options_; }
  int step() const { return step_; }
  bool trainer() const { return options_.rank == 0; }
  void close();

 private:
  WeightSync() = default;
  void requireOpen() const;

  WeightSyncOptions options_;
  pybind11::object storeRef_;
  pybind11::list arrays_;  // keeps the tensors' memory alive
  std::unique_ptr<sync::UpdateProblem> problem_;
  plan::TransferPlan plan_;
  std::vector<exec::RankLayout> layouts_;
  std::unique_ptr<workloads::SyntheticWeights> unusedWeights_;  // the executor's signature
  std::unique_ptr<PrefixStore> transportStore_, execStore_;
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<exec::TensorShards> shards_;
  std::unique_ptr<exec::RankExecutor> executor_;
  std::mutex mu_;
  int step_ = 0;
  std::string failed_;  // why the last update failed: the executor is not reused
};

}  // namespace tide::python
