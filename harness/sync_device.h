#pragma once
// `tide sync --device-memory`: the ranks' training and inference shards in
// CUDA device memory (engine/exec/executor/device_shards.h), staged through
// their registered host buffers. Its options' checks, the skip where no
// device exists, the shard memory each rank opens and the result's block.

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/exec/rank/sync_run.h"
#include "harness/sync_args.h"

namespace tide::harness {

// Bad --device-memory / --staging* input, or a run they cannot go with.
Status checkDeviceMemory(const SyncArgs& a, const Prepared& p);
// Exit 77, "skipped: no CUDA device" (or "built without CUDA ..."), where a
// --device-memory run cannot have its device.
void skipWithoutDevice(const SyncArgs& a);
// The shard memory and staging of every rank (nothing without --device-memory).
void setDeviceMemory(const SyncArgs& a, exec::RankRunOptions& o);
// The result document's "device_memory" block (null without --device-memory).
nlohmann::json deviceMemoryJson(const SyncArgs& a);

}  // namespace tide::harness
