#pragma once
// The costs of the update's non-wire steps that no hardware figure of the
// cluster spec sets. Their values, each labelled with its source, come from a
// cost profile (profiles/*.toml, sim/cost_profile.h); a scenario may override
// them in [calibration]. FP8 quantization is not one of them: it is one pass
// of a kernel over the GPU's memory (a device_pass step), timed by the
// cluster's `hbm` figure.

namespace tide::sim {

struct Calibration {
  // Host (CPU) time of one eager tensor operation issued from Python: op
  // dispatch plus a CUDA kernel launch or a copy call. The per-tensor passes of
  // the weight-update code (HF conversion and the quantization kernel's
  // launch, the CPU replica's weight loaders) cost a counted number of these
  // per tensor (engine/sync/miles/miles_update.cc). Profile key host_op.
  double hostOpSeconds = 0;
  // One step of a weight loader's name-matching loop in CPython (tuple unpack
  // and a substring test, loader_scan.h). Profile key py_step.
  double pyStepSeconds = 0;
  // One control round trip to the inference engines (HTTP request, scheduler,
  // workers): per broadcast bucket, and for pause and for resume. Key engine_call.
  double engineCallSeconds = 0;
  // Post-load processing on each inference rank, per MLA layer of a model
  // served in FP8: the engine re-quantizes the layer's kv_b_proj for its
  // absorbed attention; a bf16 or non-MLA model has nothing to re-quantize.
  // Flat per layer. Key mla_requant.
  double mlaRequantSeconds = 0;
  // Memory registration: seconds per page pinned and mapped. Key register_page.
  double registerPerPageSeconds = 0;
  // broadcast: a stage that finds the engines' update lock held sleeps this
  // long and tries again; 0 = the lock passes first-come. Key lock_poll.
  double lockPollSeconds = 0;
};

}  // namespace tide::sim
