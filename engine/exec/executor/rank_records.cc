#include "engine/exec/executor/rank_records.h"

#include "engine/core/wire.h"

namespace tide::exec {

std::string encodeTiming(const TimingRecord& t) {
  WireWriter w(WireKind::kTiming);
  w.f64(t.tStart).f64(t.tEnd).u64(t.bytesSent).u64(t.bytesLocal).f64(t.verifySeconds);
  w.u64(t.bytesFull).u64(t.bytesRead).u64(t.elements).u64(t.changed).u64(t.bytesVerified);
  w.f64(t.stageOutSeconds).f64(t.stageInSeconds);
  return w.take();
}

Result<TimingRecord> decodeTiming(std::string_view bytes) {
  WireReader r(bytes, WireKind::kTiming, "timing record");
  TimingRecord t;
  r.f64(t.tStart);
  r.f64(t.tEnd);
  r.u64(t.bytesSent);
  r.u64(t.bytesLocal);
  r.f64(t.verifySeconds);
  r.u64(t.bytesFull);
  r.u64(t.bytesRead);
  r.u64(t.elements);
  r.u64(t.changed);
  r.u64(t.bytesVerified);
  r.f64(t.stageOutSeconds);
  r.f64(t.stageInSeconds);
  TIDE_RETURN_IF_ERROR(r.finish());
  return t;
}

std::string encodeSetup(const SetupRecord& s) {
  WireWriter w(WireKind::kSetup);
  w.u32(s.registrations).u64(s.registeredBytes).f64(s.registerSeconds);
  return w.take();
}

Result<SetupRecord> decodeSetup(std::string_view bytes) {
  WireReader r(bytes, WireKind::kSetup, "setup record");
  SetupRecord s;
  if (r.u32(s.registrations) && r.u64(s.registeredBytes) && r.f64(s.registerSeconds) &&
      !(s.registerSeconds >= 0)) {
    r.fail("negative registration time");
  }
  TIDE_RETURN_IF_ERROR(r.finish());
  return s;
}

namespace {
// An event's fields on the wire: tStart tEnd (f64), src dst (i32), bytes
// (u64), stage step (i32), path (u32), unit (i32), piece (u32).
constexpr size_t kEventBytes = 8 + 8 + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 4;
}  // namespace

std::string encodeEvents(std::span<const traces::Event> events) {
  WireWriter w(WireKind::kEvents);
  w.u64(events.size());
  for (const auto& e : events) {
    w.f64(e.tStart).f64(e.tEnd).i32(e.src).i32(e.dst).u64(e.bytes).i32(e.stage).i32(e.step);
    w.u32(static_cast<uint32_t>(e.path)).i32(e.unit).u32(e.piece);
  }
  return w.take();
}

Result<std::vector<traces::Event>> decodeEvents(std::string_view bytes) {
  WireReader r(bytes, WireKind::kEvents, "event record");
  uint64_t n = 0;
  std::vector<traces::Event> events;
  // The count is checked against the bytes there are before anything is
  // allocated for it.
  if (r.u64(n) && n != r.remaining() / kEventBytes) {
    r.fail(std::to_string(n) + " events announced, " + std::to_string(r.remaining()) +
           " bytes follow");
  }
  if (r.ok()) events.resize(n);
  for (auto& e : events) {
    uint32_t path = 0;
    if (!(r.f64(e.tStart) && r.f64(e.tEnd) && r.i32(e.src) && r.i32(e.dst) && r.u64(e.bytes) &&
          r.i32(e.stage) && r.i32(e.step) && r.u32(path) && r.i32(e.unit) && r.u32(e.piece)))
      break;
    if (path >= static_cast<uint32_t>(traces::kEventPathCount)) {
      r.fail("event path " + std::to_string(path) + " out of range");
      break;
    }
    e.path = static_cast<traces::EventPath>(path);
  }
  TIDE_RETURN_IF_ERROR(r.finish());
  return events;
}

std::string encodeSwitch(const SwitchRecord& s) {
  WireWriter w(WireKind::kSwitch);
  w.f64(s.pauseSeconds).f64(s.atSeconds).u64(s.reads).u64(s.readsDuringUpdate).u64(s.torn);
  w.u64(s.shadowBytes);
  return w.take();
}

Result<SwitchRecord> decodeSwitch(std::string_view bytes) {
  WireReader r(bytes, WireKind::kSwitch, "switch record");
  SwitchRecord s;
  r.f64(s.pauseSeconds);
  r.f64(s.atSeconds);
  r.u64(s.reads);
  r.u64(s.readsDuringUpdate);
  r.u64(s.torn);
  r.u64(s.shadowBytes);
  TIDE_RETURN_IF_ERROR(r.finish());
  return s;
}

std::string encodeJoinPull(const JoinPullRecord& j) {
  WireWriter w(WireKind::kJoinPull);
  w.f64(j.seconds).f64(j.pullSeconds).u64(j.bytes).i32(j.version);
  return w.take();
}

Result<JoinPullRecord> decodeJoinPull(std::string_view bytes) {
  WireReader r(bytes, WireKind::kJoinPull, "join record");
  JoinPullRecord j;
  int32_t version = 0;
  if (r.f64(j.seconds) && r.f64(j.pullSeconds) && r.u64(j.bytes) && r.i32(version)) {
    j.version = version;
  }
  TIDE_RETURN_IF_ERROR(r.finish());
  return j;
}

std::string encodeWindow(const WindowRecord& w) {
  WireWriter out(WireKind::kWindow);
  out.f64(w.tStart).f64(w.tEnd);
  return out.take();
}

Result<WindowRecord> decodeWindow(std::string_view bytes) {
  WireReader r(bytes, WireKind::kWindow, "window record");
  WindowRecord w;
  r.f64(w.tStart);
  r.f64(w.tEnd);
  TIDE_RETURN_IF_ERROR(r.finish());
  return w;
}

}  // namespace tide::exec
