#include "engine/exec/rank_records.h"

#include <cstring>
#include <sstream>

namespace tide::exec {
namespace {

Status bad(const char* what) {
  return TIDE_ERROR(Code::kDataLoss, std::string("exec: bad ") + what + " record");
}

// Doubles to 17 digits: they round-trip exactly.
std::ostringstream exact() {
  std::ostringstream o;
  o.precision(17);
  return o;
}

}  // namespace

std::string encodeTiming(const TimingRecord& t) {
  auto o = exact();
  o << t.tStart << ' ' << t.tEnd << ' ' << t.bytesSent << ' ' << t.bytesLocal << ' '
    << t.verifySeconds << ' ' << t.bytesFull << ' ' << t.bytesRead << ' ' << t.elements << ' '
    << t.changed << ' ' << t.bytesVerified;
  return o.str();
}

Result<TimingRecord> decodeTiming(const std::string& text) {
  std::istringstream in(text);
  TimingRecord t;
  if (!(in >> t.tStart >> t.tEnd >> t.bytesSent >> t.bytesLocal >> t.verifySeconds >> t.bytesFull >>
        t.bytesRead >> t.elements >> t.changed >> t.bytesVerified))
    return bad("timing");
  return t;
}

std::string encodeSetup(const SetupRecord& s) {
  auto o = exact();
  o << s.registrations << ' ' << s.registeredBytes << ' ' << s.registerSeconds;
  return o.str();
}

Result<SetupRecord> decodeSetup(const std::string& text) {
  std::istringstream in(text);
  SetupRecord s;
  if (!(in >> s.registrations >> s.registeredBytes >> s.registerSeconds) || s.registerSeconds < 0)
    return bad("setup");
  return s;
}

std::string encodeEvents(std::span<const traces::Event> events) {
  std::string bytes(events.size_bytes(), '\0');
  if (!bytes.empty()) std::memcpy(bytes.data(), events.data(), bytes.size());
  return bytes;
}

Result<std::vector<traces::Event>> decodeEvents(const std::string& bytes) {
  if (bytes.size() % sizeof(traces::Event) != 0) return bad("event");
  std::vector<traces::Event> events(bytes.size() / sizeof(traces::Event));
  if (!bytes.empty()) std::memcpy(events.data(), bytes.data(), bytes.size());
  for (const auto& e : events) {
    if (static_cast<int>(e.path) >= traces::kEventPathCount) return bad("event");
  }
  return events;
}

std::string encodeSwitch(const SwitchRecord& s) {
  auto o = exact();
  o << s.pauseSeconds << ' ' << s.atSeconds << ' ' << s.reads << ' ' << s.readsDuringUpdate << ' '
    << s.torn << ' ' << s.shadowBytes;
  return o.str();
}

Result<SwitchRecord> decodeSwitch(const std::string& text) {
  std::istringstream in(text);
  SwitchRecord s;
  if (!(in >> s.pauseSeconds >> s.atSeconds >> s.reads >> s.readsDuringUpdate >> s.torn >>
        s.shadowBytes))
    return bad("switch");
  return s;
}

std::string encodeJoinPull(const JoinPullRecord& j) {
  auto o = exact();
  o << j.seconds << ' ' << j.pullSeconds << ' ' << j.bytes << ' ' << j.version;
  return o.str();
}

Result<JoinPullRecord> decodeJoinPull(const std::string& text) {
  std::istringstream in(text);
  JoinPullRecord j;
  if (!(in >> j.seconds >> j.pullSeconds >> j.bytes >> j.version)) return bad("join");
  return j;
}

std::string encodeWindow(const WindowRecord& w) {
  auto o = exact();
  o << w.tStart << ' ' << w.tEnd;
  return o.str();
}

Result<WindowRecord> decodeWindow(const std::string& text) {
  std::istringstream in(text);
  WindowRecord w;
  if (!(in >> w.tStart >> w.tEnd)) return bad("window");
  return w;
}

}  // namespace tide::exec
