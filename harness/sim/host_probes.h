#pragma once
// Figures of this host that the simulator takes for an emulated cluster,
// whose ranks all run here: micro-benchmarks run when a prediction is made
// (or before a validation matrix), never constants fitted on the runs they
// predict.

#include <string>

#include "engine/core/status.h"

namespace tide::harness {

struct HostFigures {
  double tcpBps = 0;                                       // 0: intra-node tcp unlimited
  double convertBps = 0;                                   // 0: conversions free
  std::string tcpSource = "none", convertSource = "none";  // none | probe | given
  int cores = 1;
};

// Each of `tcp` and `convert`: "probe" (measure it now), a rate ("3GB/s")
// or "none"; a bad rate is an error naming --host-tcp / --host-convert.
[[nodiscard]] Result<HostFigures> measureHost(const std::string& tcp, const std::string& convert);

// The tcp rate between two threads of this host on 127.0.0.1 (bytes/s):
// median of three 64 MiB probes.
[[nodiscard]] Result<double> probeLoopbackTcp();

// The rate at which one thread of this host quantizes bf16 to block-scaled
// FP8 with the executor's own code (exec::quantizeBlocks: a 4096 x 2048
// tensor in 128 x 128 blocks), in the bytes of plan::fp8PassBytes (what
// the simulator prices a conversion in): median of three passes.
[[nodiscard]] Result<double> probeHostConvert();

// The CPUs this process may run on (sched_getaffinity).
int hostCores();

}  // namespace tide::harness
