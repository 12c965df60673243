#include "engine/exec/executor/exec_report.h"

#include <algorithm>

#include "engine/exec/executor/rank_records.h"

namespace tide::exec {

namespace {

std::string switchKey(int step, int rank) {
  return "step" + std::to_string(step) + "/switch/r" + std::to_string(rank);
}
std::string joinKey(int step, int rank) {
  return "step" + std::to_string(step) + "/join/r" + std::to_string(rank);
}
std::string windowKey(int step, int rank) {
  return "step" + std::to_string(step) + "/window/r" + std::to_string(rank);
}

std::string resultKey(int step, int rank) {
  return "step" + std::to_string(step) + "/result/r" + std::to_string(rank);
}

}  // namespace

Status publishVerified(Store& store, int step, int rank, const Status& verified) {
  return store.set(resultKey(step, rank),
                   verified.isOk() ? std::string("ok") : verified.toString());
}

Status gatherVerified(Store& store, int step, int world, double timeoutSeconds) {
  for (int r = 0; r < world; ++r) {
    TIDE_ASSIGN_OR_RETURN(std::string res, store.get(resultKey(step, r), timeoutSeconds));
    if (res != "ok") {
      return TIDE_ERROR(Code::kDataLoss, "step " + std::to_string(step) +
                                             " not bit-exact on rank " + std::to_string(r) + ": " +
                                             res);
    }
  }
  return Status::ok();
}

Status publishSwitch(Store& store, int step, int rank, double pauseSeconds, double atSeconds,
                     const GenerationStats& g, uint64_t shadowBytes) {
  SwitchRecord rec{pauseSeconds, atSeconds, g.reads, g.readsDuringUpdate, g.torn, shadowBytes};
  TIDE_RETURN_IF_ERROR(store.set(switchKey(step, rank), encodeSwitch(rec)));
  if (g.torn > 0) {
    return TIDE_ERROR(Code::kDataLoss, "switch: generation on rank " + std::to_string(rank) +
                                           " read a torn shard " + std::to_string(g.torn) +
                                           " times up to version " + std::to_string(step));
  }
  return Status::ok();
}

Status gatherSwitches(Store& store, int step, int world, double timeoutSeconds,
                      ExecReport& report) {
  SwitchStep s;
  s.step = step;
  double first = 1e300, last = -1e300;
  uint64_t shadow = 0;
  for (int r = 0; r < world; ++r) {
    TIDE_ASSIGN_OR_RETURN(std::string text, store.get(switchKey(step, r), timeoutSeconds));
    auto rec = decodeSwitch(text);
    if (!rec.isOk()) {
      return rec.status().withContext("switch: rank " + std::to_string(r));
    }
    s.pauseSeconds = std::max(s.pauseSeconds, rec->pauseSeconds);
    if (rec->atSeconds > 0) {
      first = std::min(first, rec->atSeconds);
      last = std::max(last, rec->atSeconds);
    }
    s.generationReads += rec->reads;
    s.readsDuringUpdate += rec->readsDuringUpdate;
    s.tornReads += rec->torn;
    shadow += rec->shadowBytes;
  }
  s.skewSeconds = last >= first ? last - first : 0;
  report.shadowBytes = shadow;
  report.switches.push_back(s);
  if (s.tornReads > 0) {
    return TIDE_ERROR(Code::kDataLoss, "switch: generation read a torn shard " +
                                           std::to_string(s.tornReads) + " times by step " +
                                           std::to_string(step));
  }
  return Status::ok();
}

Status publishJoin(Store& store, int step, int rank, double seconds, double pullSeconds,
                   uint64_t bytes, uint64_t version) {
  JoinPullRecord rec{seconds, pullSeconds, bytes, static_cast<int>(version)};
  return store.set(joinKey(step, rank), encodeJoinPull(rec));
}

Status publishWindow(Store& store, int step, int rank, double tStart, double tEnd) {
  return store.set(windowKey(step, rank), encodeWindow(WindowRecord{tStart, tEnd}));
}

Status gatherJoin(Store& store, int step, const std::vector<int>& ranks,
                  const std::vector<int>& others, double timeoutSeconds, ExecReport& report) {
  JoinRecord j;
  j.step = step;
  j.ranks = ranks;
  double first = 1e300, last = -1e300;
  for (int r : others) {
    TIDE_ASSIGN_OR_RETURN(std::string text, store.get(windowKey(step, r), timeoutSeconds));
    auto w = decodeWindow(text);
    if (!w.isOk()) {
      return w.status().withContext("join: rank " + std::to_string(r));
    }
    first = std::min(first, w->tStart);
    last = std::max(last, w->tEnd);
  }
  j.othersSeconds = last >= first ? last - first : 0;
  for (int r : ranks) {
    TIDE_ASSIGN_OR_RETURN(std::string text, store.get(joinKey(step, r), timeoutSeconds));
    auto rec = decodeJoinPull(text);
    if (!rec.isOk()) {
      return rec.status().withContext("join: rank " + std::to_string(r));
    }
    j.seconds = std::max(j.seconds, rec->seconds);
    j.pullSeconds = std::max(j.pullSeconds, rec->pullSeconds);
    j.bytes += rec->bytes;
    j.version = rec->version;
  }
  report.join = j;
  return Status::ok();
}

}  // namespace tide::exec
