#pragma once
// A validation matrix (`tide validate --matrix FILE.toml`): configurations of
// the emulated cluster, each run for real and in the simulator on the same
// plan, one row per (configuration, strategy, backend). The file format is
// docs/formats/validation-matrix.md; scenarios/validation/matrix.toml is
// the shipped one.
//
//   [defaults]                 # any row key, for every [[config]]
//   steps = 2
//   [[config]]
//   name = "dense-4n"          # unique; rows are "dense-4n/p2p/tcp"
//   varies = "model"           # the axis it varies, for the report
//   model = "tiny-dense"  scale = 1  train = "..."  infer = "..."
//   cluster = "emulated:nodes=4,gpus=2,nic=100Mbps,nics=1"
//   strategies = ["broadcast", "p2p"]   backends = ["tcp", "rdma"]
//   quick = ["p2p"]            # the rows of the quick subset (--quick)

#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::harness {

struct MatrixRow {
  std::string config, varies, strategy, backend;
  // The update, as `tide plan` / `tide sync` flags take it.
  std::string model, train, infer, cluster, bucket, chunk, inferDtype;
  int scale = 1;
  int steps = 2;
  int streams = 0;  // 0: tide sync's default
  int timeoutSeconds = 600;
  bool quick = false;

  std::string name() const { return config + "/" + strategy + "/" + backend; }
  // Flags describing the update to `tide plan` (the plan records them).
  std::vector<std::string> planArgs() const;
};

struct MatrixFile {
  std::string path;
  std::vector<MatrixRow> rows;  // in file order
};

// One clear error (file:line where toml++ gives it) for a malformed file,
// an unknown key, a duplicate row, a strategy that does not run on the wire
// or a cluster that is not an emulated one.
[[nodiscard]] Result<MatrixFile> loadMatrix(const std::string& path);

}  // namespace tide::harness
