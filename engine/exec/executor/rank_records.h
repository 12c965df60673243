#pragma once
// The records each rank publishes through the key-value store for rank 0 to
// add up (a step's timing and events, a version switch, an elastic join),
// written and read here only, in the versioned encoding of
// engine/core/wire.h. A record comes from another process: every decoder
// fails with kDataLoss on malformed bytes (saying what was wrong and where)
// and never throws.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "traces/event.h"

namespace tide::exec {

// One rank's step: its transfer window (steady-clock seconds) and counters.
struct TimingRecord {
  double tStart = 0, tEnd = 0;
  uint64_t bytesSent = 0, bytesLocal = 0;
  double verifySeconds = 0;
  uint64_t bytesFull = 0, bytesRead = 0, elements = 0, changed = 0;
  uint64_t bytesVerified = 0;                      // inference-shard bytes checked bit-exact
  double stageOutSeconds = 0, stageInSeconds = 0;  // device memory: D2H, H2D
};
std::string encodeTiming(const TimingRecord& t);
Result<TimingRecord> decodeTiming(std::string_view bytes);

// One rank's set-up: its registrations, their bytes and time.
struct SetupRecord {
  uint32_t registrations = 0;
  uint64_t registeredBytes = 0;
  double registerSeconds = 0;
};
std::string encodeSetup(const SetupRecord& s);
Result<SetupRecord> decodeSetup(std::string_view bytes);

// A step's events of one rank, field by field (a count, then each event).
std::string encodeEvents(std::span<const traces::Event> events);
Result<std::vector<traces::Event>> decodeEvents(std::string_view bytes);

// One rank's version switch (pause and `at` are 0 where it switched nothing).
struct SwitchRecord {
  double pauseSeconds = 0, atSeconds = 0;
  uint64_t reads = 0, readsDuringUpdate = 0, torn = 0, shadowBytes = 0;
};
std::string encodeSwitch(const SwitchRecord& s);
Result<SwitchRecord> decodeSwitch(std::string_view bytes);

// A joining rank's pull (seconds: with the check; pullSeconds: without).
struct JoinPullRecord {
  double seconds = 0, pullSeconds = 0;
  uint64_t bytes = 0;
  int version = -1;
};
std::string encodeJoinPull(const JoinPullRecord& j);
Result<JoinPullRecord> decodeJoinPull(std::string_view bytes);

// An inference rank's transfer window in the join step.
struct WindowRecord {
  double tStart = 0, tEnd = 0;
};
std::string encodeWindow(const WindowRecord& w);
Result<WindowRecord> decodeWindow(std::string_view bytes);

}  // namespace tide::exec
