#pragma once
// The simulator's calibration constants: costs that are not set by a
// hardware figure of the cluster spec. There are five, no more; each has a
// default with its source (docs/sim.md, "Calibration") and can be set per
// scenario in [calibration]. FP8 quantization is not one of them: it is one
// pass of a kernel over the GPU's memory (strategy_graphs.cc), timed by the
// cluster's `hbm` figure.

namespace tide::sim {

struct Calibration {
  // Host (CPU) time of one eager tensor operation issued from Python: op
  // dispatch plus a CUDA kernel launch or a copy call. The per-tensor passes of
  // the weight-update code (HF conversion and the quantization kernel's launch, the CPU
  // replica's weight loaders) cost a counted number of these per tensor
  // (strategy_graphs.cc). Source: PyTorch eager per-op CPU overhead and CUDA
  // launch latency are each of the order of 5-10 us; taken as 10 us.
  double hostOpSeconds = 10e-6;
  // One step of a weight loader's name-matching loop in CPython (tuple unpack
  // and a substring test, loader_scan.h). Source: that loop over Kimi-K2's
  // 1,152-entry expert mapping timed with CPython 3.11's timeit, 45-72 ns a
  // step (docs/sim.md, "Calibration"); taken as 50 ns.
  double pyStepSeconds = 50e-9;
  // One control round trip to the inference engines (HTTP request, scheduler,
  // workers): per broadcast bucket, and for pause and for resume. 5 ms.
  double engineCallSeconds = 5e-3;
  // Post-load processing on each inference rank, per MLA layer of a model
  // served in FP8: the engine re-quantizes the layer's kv_b_proj for its
  // absorbed attention (SGLang's post_load_weights); a bf16 or non-MLA
  // model has nothing to re-quantize. Source: the RL framework's
  // documentation gives Kimi-K2's post_load_weights as ~884 ms after a p2p
  // update (61 MLA layers, 64x64 FP8 blocks): 14.5 ms a layer. Flat per
  // layer: the rank's kv_b_proj slice (larger with fewer attention ranks)
  // and the block size are not scaled, for want of a second figure.
  double mlaRequantSeconds = 0.884 / 61;
  // Memory registration: seconds per page pinned and mapped. Source:
  // docs/sources.md, "80 GB of 4 KiB pages ≈ 20 M page entries: seconds": 0.2 us/page.
  double registerPerPageSeconds = 0.2e-6;
};

}  // namespace tide::sim
