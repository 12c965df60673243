#include "engine/exec/exec_report.h"

#include <algorithm>
#include <sstream>

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

}  // namespace

Status publishSwitch(Store& store, int step, int rank, double pauseSeconds, double atSeconds,
                     const GenerationStats& g, uint64_t shadowBytes) {
  std::ostringstream rec;
  rec.precision(17);
  rec << pauseSeconds << ' ' << atSeconds << ' ' << g.reads << ' ' << g.readsDuringUpdate << ' '
      << g.torn << ' ' << shadowBytes;
  TIDE_RETURN_IF_ERROR(store.set(switchKey(step, rank), rec.str()));
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
    std::istringstream in(text);
    double p = 0, t = 0;
    uint64_t reads = 0, during = 0, torn = 0, bytes = 0;
    if (!(in >> p >> t >> reads >> during >> torn >> bytes)) {
      return TIDE_ERROR(Code::kDataLoss, "switch: bad record from rank " + std::to_string(r));
    }
    s.pauseSeconds = std::max(s.pauseSeconds, p);
    if (t > 0) {
      first = std::min(first, t);
      last = std::max(last, t);
    }
    s.generationReads += reads;
    s.readsDuringUpdate += during;
    s.tornReads += torn;
    shadow += bytes;
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
  std::ostringstream rec;
  rec.precision(17);
  rec << seconds << ' ' << pullSeconds << ' ' << bytes << ' ' << version;
  return store.set(joinKey(step, rank), rec.str());
}

Status publishWindow(Store& store, int step, int rank, double tStart, double tEnd) {
  std::ostringstream rec;
  rec.precision(17);
  rec << tStart << ' ' << tEnd;
  return store.set(windowKey(step, rank), rec.str());
}

Status gatherJoin(Store& store, int step, const std::vector<int>& ranks,
                  const std::vector<int>& others, double timeoutSeconds, ExecReport& report) {
  JoinRecord j;
  j.step = step;
  j.ranks = ranks;
  double first = 1e300, last = -1e300;
  for (int r : others) {
    TIDE_ASSIGN_OR_RETURN(std::string text, store.get(windowKey(step, r), timeoutSeconds));
    std::istringstream in(text);
    double a = 0, b = 0;
    if (!(in >> a >> b)) {
      return TIDE_ERROR(Code::kDataLoss, "join: bad window from rank " + std::to_string(r));
    }
    first = std::min(first, a);
    last = std::max(last, b);
  }
  j.othersSeconds = last >= first ? last - first : 0;
  for (int r : ranks) {
    TIDE_ASSIGN_OR_RETURN(std::string text, store.get(joinKey(step, r), timeoutSeconds));
    std::istringstream in(text);
    double secs = 0, pull = 0;
    uint64_t bytes = 0;
    int version = -1;
    if (!(in >> secs >> pull >> bytes >> version)) {
      return TIDE_ERROR(Code::kDataLoss, "join: bad record from rank " + std::to_string(r));
    }
    j.seconds = std::max(j.seconds, secs);
    j.pullSeconds = std::max(j.pullSeconds, pull);
    j.bytes += bytes;
    j.version = version;
  }
  report.join = j;
  return Status::ok();
}

}  // namespace tide::exec
