#pragma once
// The simulator's calibration constants: costs that are not set by a
// hardware figure of the cluster spec. There are six, no more; each has a
// default with its source (docs/sim.md, "Calibration") and can be set per
// scenario in [calibration].

namespace tide::sim {

struct Calibration {
  // FP8 block quantization on one GPU, bytes of BF16 input per second. Source:
  // a memory-bound elementwise pass (read 2 B, write 1 B + scales) run tensor
  // by tensor from Python reaches a fraction of H100 HBM bandwidth (3.35 TB/s);
  // taken as 200 GB/s.
  double quantBps = 200e9;
  // Loading converted tensors into the pinned CPU replica, per training rank,
  // bytes/s: one Python process per rank copying tensor by tensor through the
  // engine's weight loaders; taken as 10 GB/s (single-thread memcpy class).
  double replicaLoadBps = 10e9;
  // An inference engine ingesting weights handed to it through its update API
  // (per-bucket load_weights on every rank), bytes/s per rank; taken as
  // 100 GB/s (device copies, tensor by tensor).
  double engineIngestBps = 100e9;
  // One control round trip to the inference engines (HTTP request, scheduler,
  // workers): per broadcast bucket, and for pause and for resume. 5 ms.
  double engineCallSeconds = 5e-3;
  // Post-load processing on each inference rank (e.g. MLA weight absorption,
  // re-layouts) over the bytes it holds, bytes/s; taken as 100 GB/s.
  double postprocessBps = 100e9;
  // Memory registration: seconds per page pinned and mapped. Source:
  // ANCHORS "80 GB of 4 KiB pages ≈ 20 M page entries, seconds": 0.2 us/page.
  double registerPerPageSeconds = 0.2e-6;
};

}  // namespace tide::sim
