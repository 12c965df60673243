#include "engine/plan/plan_steps.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace tide::plan {

using nlohmann::json;

const char* stepKindName(StepKind k) {
  switch (k) {
    case StepKind::kJoin:
      return "join";
    case StepKind::kHostOps:
      return "host_ops";
    case StepKind::kControlRound:
      return "control_round";
    case StepKind::kPostprocess:
      return "postprocess";
    case StepKind::kRegister:
      return "register";
    case StepKind::kDevicePass:
      return "device_pass";
    case StepKind::kDeviceToHost:
      return "device_to_host";
    case StepKind::kAllGather:
      return "all_gather";
    case StepKind::kBroadcast:
      return "broadcast";
    case StepKind::kHostWrite:
      return "host_write";
  }
  return "?";
}

uint16_t StepGraph::stage(std::string_view name) {
  for (size_t i = 0; i < stageNames.size(); ++i)
    if (stageNames[i] == name) return static_cast<uint16_t>(i);
  stageNames.emplace_back(name);
  return static_cast<uint16_t>(stageNames.size() - 1);
}

uint32_t StepGraph::add(Step s) {
  steps.push_back(s);
  return static_cast<uint32_t>(steps.size() - 1);
}

uint32_t StepGraph::add(StepKind kind, uint32_t rank, double count, uint16_t stage) {
  Step s;
  s.kind = kind;
  s.rank = rank;
  s.count = count;
  s.stage = stage;
  return add(s);
}

uint32_t StepGraph::group(std::vector<uint32_t> members) {
  groups.push_back(std::move(members));
  return static_cast<uint32_t>(groups.size() - 1);
}

int32_t StepGraph::lock(bool polled) {
  locks.push_back({polled});
  return static_cast<int32_t>(locks.size() - 1);
}

namespace {

Status bad(const std::string& why) {
  return TIDE_ERROR(Code::kInvalidArgument, "plan steps: " + why);
}

bool sizeOk(double v) {
  return std::isfinite(v) && v >= 0;
}

}  // namespace

Status StepGraph::validate(size_t ranks) const {
  for (const auto& g : groups)
    for (uint32_t r : g)
      if (r >= ranks) return bad("a group names rank " + std::to_string(r));
  for (const auto& l : locks)
    if (l.polled && l.stage >= stageNames.size()) return bad("a polled lock names a bad stage");
  std::vector<uint32_t> indegree(steps.size(), 0);
  for (auto [a, b] : edges) {
    if (a >= steps.size() || b >= steps.size() || a == b) return bad("an edge names a bad step");
    ++indegree[b];
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    std::string at = "step " + std::to_string(i) + " (" + stepKindName(s.kind) + ")";
    if (static_cast<int>(s.kind) >= kStepKindCount) return bad(at + " has an unknown kind");
    if (s.stage >= stageNames.size() && s.kind != StepKind::kJoin) return bad(at + ": bad stage");
    if (s.rank >= ranks || s.peer >= ranks) return bad(at + " names a missing rank");
    bool grouped = s.kind == StepKind::kAllGather || s.kind == StepKind::kBroadcast;
    if (grouped && s.group >= groups.size()) return bad(at + " names a missing group");
    if (grouped && s.lanes == 0) return bad(at + " has no lanes");
    // A collective runs as one flow per lane: a lock would hold one lane.
    if (grouped && s.acquire >= 0) return bad(at + ": a collective cannot take a lock");
    for (int32_t l : {s.acquire, s.release})
      if (l >= static_cast<int32_t>(locks.size()) || l < -1) return bad(at + ": bad lock");
    if (!sizeOk(s.count) || !sizeOk(s.loopSteps) || !sizeOk(s.bytes) || !sizeOk(s.chunkBytes))
      return bad(at + " has a negative or non-finite size");
  }
  // Kahn: every step must be reachable in a topological order.
  std::vector<std::vector<uint32_t>> succ(steps.size());
  for (auto [a, b] : edges) succ[a].push_back(b);
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < steps.size(); ++i)
    if (indegree[i] == 0) ready.push_back(i);
  size_t seen = 0;
  while (!ready.empty()) {
    uint32_t i = ready.back();
    ready.pop_back();
    ++seen;
    for (uint32_t j : succ[i])
      if (--indegree[j] == 0) ready.push_back(j);
  }
  if (seen != steps.size()) return bad("the dependencies have a cycle");
  return Status::ok();
}

// Steps as arrays in the order of "step_fields", edges as pairs: compact for
// plans of millions of steps.
json StepGraph::toJson() const {
  json st = json::array();
  for (const Step& s : steps) {
    st.push_back({stepKindName(s.kind), s.stage, s.lanes, s.rank, s.peer,
                  s.group == kNoGroup ? -1 : static_cast<int64_t>(s.group), s.acquire, s.release,
                  s.count, s.loopSteps, s.bytes, s.chunkBytes});
  }
  json lk = json::array();
  for (const auto& l : locks) lk.push_back({{"polled", l.polled}, {"stage", l.stage}});
  return {{"step_fields",
           {"kind", "stage", "lanes", "rank", "peer", "group", "acquire", "release", "count",
            "loop_steps", "bytes", "chunk_bytes"}},
          {"stage_names", stageNames},
          {"groups", groups},
          {"locks", lk},
          {"steps", st},
          {"edges", edges},
          {"buckets_per_stage", bucketsPerStage},
          {"merge_factor", mergeFactor},
          {"wire_bytes", wireBytes}};
}

Result<StepGraph> StepGraph::fromJson(const json& j) {
  try {
    StepGraph g;
    if (j.at("step_fields") != StepGraph{}.toJson().at("step_fields"))
      return bad("unexpected step_fields");
    g.stageNames = j.at("stage_names").get<std::vector<std::string>>();
    g.groups = j.at("groups").get<std::vector<std::vector<uint32_t>>>();
    for (const auto& l : j.at("locks")) {
      const int64_t st = l.at("stage").get<int64_t>();
      if (st < 0 || st > 0xffff) return bad("a lock's stage is out of range");
      g.locks.push_back({l.at("polled").get<bool>(), static_cast<uint16_t>(st)});
    }
    for (const auto& a : j.at("steps")) {
      if (!a.is_array() || a.size() != 12) return bad("a step is not a 12-field array");
      Step s;
      const std::string kind = a[0].get<std::string>();
      int k = 0;
      while (k < kStepKindCount && kind != stepKindName(static_cast<StepKind>(k))) ++k;
      if (k == kStepKindCount) return bad("unknown step kind '" + kind + "'");
      s.kind = static_cast<StepKind>(k);
      // Read wide and range-checked: a narrowing read would wrap a bad
      // index onto a valid one.
      auto field = [&](size_t i, int64_t lo, int64_t hi, int64_t& out) {
        out = a[i].get<int64_t>();
        return out >= lo && out <= hi;
      };
      int64_t v[7];
      const std::pair<int64_t, int64_t> range[7] = {
          {0, 0xffff},        {0, 0xffff},      {0, 0xffffffffLL}, {0, 0xffffffffLL},
          {-1, 0xfffffffeLL}, {-1, 0x7fffffff}, {-1, 0x7fffffff}};
      for (size_t i = 0; i < 7; ++i)
        if (!field(i + 1, range[i].first, range[i].second, v[i]))
          return bad("step field " + std::to_string(i + 1) + " out of range");
      s.stage = static_cast<uint16_t>(v[0]);
      s.lanes = static_cast<uint16_t>(v[1]);
      s.rank = static_cast<uint32_t>(v[2]);
      s.peer = static_cast<uint32_t>(v[3]);
      s.group = v[4] < 0 ? kNoGroup : static_cast<uint32_t>(v[4]);
      s.acquire = static_cast<int32_t>(v[5]);
      s.release = static_cast<int32_t>(v[6]);
      s.count = a[8].get<double>();
      s.loopSteps = a[9].get<double>();
      s.bytes = a[10].get<double>();
      s.chunkBytes = a[11].get<double>();
      g.steps.push_back(s);
    }
    g.edges = j.at("edges").get<std::vector<std::pair<uint32_t, uint32_t>>>();
    g.bucketsPerStage = j.value("buckets_per_stage", 0u);
    g.mergeFactor = j.value("merge_factor", 1.0);
    g.wireBytes = j.value("wire_bytes", 0.0);
    if (!sizeOk(g.wireBytes) || !sizeOk(g.mergeFactor) || g.mergeFactor < 1)
      return bad("wire_bytes and merge_factor must be finite, merge_factor >= 1");
    return g;
  } catch (const json::exception& e) {
    return bad(e.what());
  }
}

}  // namespace tide::plan
