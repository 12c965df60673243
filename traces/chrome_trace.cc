#include "traces/chrome_trace.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tide::traces {

using nlohmann::json;

void ChromeTrace::nameProcess(int process, const std::string& name) {
  processes_[process] = name;
}

void ChromeTrace::nameTrack(int process, int track, const std::string& name) {
  tracks_[{process, track}] = name;
}

void ChromeTrace::addSendRates(int process) {
  // Per track: +rate at each start, -rate at each end, summed in time order.
  std::map<int, std::vector<std::pair<double, double>>> steps;
  for (const auto& s : slices_) {
    if (s.process != process || s.peer < 0 || s.peer == s.track || !(s.end > s.start)) continue;
    const double gbps = static_cast<double>(s.bytes) / (s.end - s.start) / 1e9;
    steps[s.track].emplace_back(s.start, gbps);
    steps[s.track].emplace_back(s.end, -gbps);
  }
  for (auto& [track, v] : steps) {
    std::sort(v.begin(), v.end());
    const std::string name = "rank " + std::to_string(track) + " send (GB/s)";
    double level = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      level += v[i].second;
      if (i + 1 < v.size() && v[i + 1].first == v[i].first) continue;  // one point per time
      counters_.push_back(Counter{process, name, v[i].first, std::max(0.0, level)});
    }
  }
}

Status ChromeTrace::write(const std::string& path) const {
  json events = json::array();
  for (const auto& [pid, name] : processes_) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", name}}}});
  }
  for (const auto& [key, name] : tracks_) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", key.first},
                      {"tid", key.second},
                      {"args", {{"name", name}}}});
  }
  std::vector<const TimelineSlice*> order;
  order.reserve(slices_.size());
  for (const auto& s : slices_) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return std::tie(a->process, a->track, a->start) < std::tie(b->process, b->track, b->start);
  });
  for (const TimelineSlice* s : order) {
    json args = {{"bytes", s->bytes}, {"step", s->step}};
    if (s->peer >= 0) args["peer"] = s->peer;
    if (s->unit >= 0) {
      args["unit"] = s->unit;
      args["piece"] = s->piece;
    }
    events.push_back({{"ph", "X"},
                      {"name", s->name},
                      {"cat", "unit"},
                      {"pid", s->process},
                      {"tid", s->track},
                      {"ts", s->start * 1e6},
                      {"dur", std::max(0.0, s->end - s->start) * 1e6},
                      {"args", std::move(args)}});
  }
  for (const auto& c : counters_) {
    events.push_back({{"ph", "C"},
                      {"name", c.name},
                      {"pid", c.process},
                      {"tid", 0},
                      {"ts", c.t * 1e6},
                      {"args", {{"GB/s", c.value}}}});
  }
  std::ofstream out(path);
  if (!out) return TIDE_ERROR(Code::kUnavailable, "timeline " + path + ": cannot write");
  out << json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  if (!out) return TIDE_ERROR(Code::kUnavailable, "timeline " + path + ": write failed");
  return Status::ok();
}

}  // namespace tide::traces
