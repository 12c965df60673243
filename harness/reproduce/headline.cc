#include "harness/reproduce/headline.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "sim/validation.h"

namespace tide::harness::reproduce {

namespace {

using nlohmann::json;

std::string partName(const char* kind, const std::string& strategy) {
  return std::string("headline_") + kind + "_" + strategy;
}

// The units of one side's run of one plan on a timeline, beside REPORT.md.
std::string timelineFile(const char* side, const std::string& strategy) {
  return std::string("timeline_") + side + "_" + strategy + ".json";
}

// Why a part gave no figure: its status and reason, or that it did not run.
std::string whyMissing(const ReportInput& in, const std::string& name) {
  const RunRecord* r = findRun(in, name);
  if (!r) return name + " not run (not in --only)";
  if (r->result.status == "ok") return name + ": no result document";
  return name + " " + r->result.status + ": " + r->result.reason;
}

std::string statusOf(const ReportInput& in, const std::string& name) {
  const RunRecord* r = findRun(in, name);
  return r ? r->result.status : "not run";
}

bool number(const json& j, const char* ptr, double* out) {
  if (!j.is_object()) return false;
  json::json_pointer p(ptr);
  if (!j.contains(p) || !j.at(p).is_number()) return false;
  *out = j.at(p).get<double>();
  return true;
}

// The real runs: both strategies' tide.sync/1 documents, or null.
json realSide(const ReportInput& in, json* status) {
  json docs[2];
  for (int i = 0; i < 2; ++i) {
    const std::string name = partName("sync", kHeadlineStrategies[i]);
    docs[i] = partDocument(in, name);
    double median = 0;
    if (!number(docs[i], "/median_step_seconds", &median)) {
      *status = {{"real_status", statusOf(in, name) == "ok" ? "failed" : statusOf(in, name)},
                 {"real_reason", whyMissing(in, name)}};
      // A run whose data was not bit-exact still says so in its document.
      json failed = partDocument(in, name, true);
      if (failed.is_object() && failed.contains("verification"))
        (*status)["real_verification"] = failed["verification"];
      return nullptr;
    }
  }
  json r = json::object();
  double t[2], lb[2];
  for (int i = 0; i < 2; ++i) {
    const std::string s = kHeadlineStrategies[i];
    const json& d = docs[i];
    number(d, "/median_step_seconds", &t[i]);
    lb[i] = d.value("lower_bound_seconds", 0.0);
    r[s + "_s"] = t[i];
    r["lower_bound_s"][s] = lb[i];
    r["bottleneck"][s] = d.value("bottleneck", "");
    r["ratio_to_bound"][s] = lb[i] > 0 ? t[i] / lb[i] : 0.0;
    json steps = json::array();
    uint64_t bytes = 0;
    for (const auto& st : d.value("steps", json::array())) {
      if (!st.is_object()) continue;
      steps.push_back(st.value("seconds", 0.0));
      bytes = st.value("bytes", uint64_t{0});
    }
    r["steps_s"][s] = steps;
    r["bytes_per_update"][s] = bytes;
    // The outcome tide sync wrote, as it wrote it.
    const json ver = d.contains("verification") && d["verification"].is_object() ? d["verification"]
                                                                                 : json::object();
    r["verification"][s] = ver.value("outcome", "unknown");
    r["verified_bytes"][s] = ver.value("verified_bytes", uint64_t{0});
  }
  r["speedup"] = t[1] > 0 ? t[0] / t[1] : 0.0;
  r["bound_speedup"] = lb[1] > 0 ? lb[0] / lb[1] : 0.0;
  r["verified"] = docs[0].value("verified", false) && docs[1].value("verified", false);
  *status = {{"real_status", "ok"}};
  return r;
}

// The simulator on the same plans and cluster spec; beside the real runs,
// each prediction is checked the way `tide validate` checks it (same bytes
// as the run moved, per-step error).
json simSameCluster(const ReportInput& in, const json& realDocs0, const json& realDocs1,
                    std::string* why) {
  const json* real[2] = {&realDocs0, &realDocs1};
  json r = json::object();
  double t[2];
  for (int i = 0; i < 2; ++i) {
    const std::string s = kHeadlineStrategies[i];
    const std::string name = partName("sim", s);
    json d = partDocument(in, name);
    if (!number(d, "/results/0/seconds", &t[i])) {
      *why = whyMissing(in, name);
      return nullptr;
    }
    r[s + "_s"] = t[i];
    r["lower_bound_s"][s] = d["results"][0].value("lower_bound_seconds", 0.0);
    r["host_tcp_gbps"][s] = d.contains("inputs") ? d["inputs"].value("host_tcp_gbps", 0.0) : 0.0;
    if (real[i]->is_object()) {
      double planBytes = 0;
      number(d, "/inputs/plan_bytes", &planBytes);
      auto v = sim::compareWithReal(*real[i], t[i], planBytes);
      r["validation"][s] = v.isOk() ? v->toJson() : json{{"refused", v.status().message()}};
    }
  }
  r["speedup"] = t[1] > 0 ? t[0] / t[1] : 0.0;
  return r;
}

json simFullScale(const ReportInput& in, std::string* why) {
  json r = json::object();
  double t[2];
  for (int i = 0; i < 2; ++i) {
    const auto& row = kKimiSimRows[i];
    const std::string name = std::string("sim_kimi_") + row.design;
    json d = partDocument(in, name);
    if (!number(d, "/results/0/seconds", &t[i])) {
      *why = whyMissing(in, name);
      return nullptr;
    }
    r[std::string(row.design) + "_s"] = t[i];
    r["strategy"][row.design] = row.strategy;
    r["lower_bound_s"][row.design] = d["results"][0].value("lower_bound_seconds", 0.0);
  }
  r["speedup"] = t[1] > 0 ? t[0] / t[1] : 0.0;
  return r;
}

json publishedSide(const ReportInput& in) {
  json r = json::object();
  double t[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    for (const auto& p : in.published) {
      if (p.primary() && p.strategy == kKimiSimRows[i].strategy) t[i] = p.seconds;
    }
    if (t[i] <= 0) return nullptr;
    r[std::string(kKimiSimRows[i].design) + "_s"] = t[i];
  }
  r["speedup"] = t[0] / t[1];
  r["source"] = "scenarios/kimi-k2-miles.toml [published]";
  return r;
}

std::string secs(const json& side, const std::string& key) {
  return side.is_object() && side.contains(key) && side[key].is_number()
             ? fmt::format("{:.3f} s", side[key].get<double>())
             : "—";
}

std::string times(const json& side, const char* key = "speedup") {
  return side.is_object() && side.contains(key) && side[key].is_number()
             ? fmt::format("{:.2f}×", side[key].get<double>())
             : "—";
}

std::string oneLine(std::string s) {
  for (auto& c : s) {
    if (c == '|' || c == '\n') c = ' ';
  }
  return s;
}

}  // namespace

std::vector<std::string> HeadlineSetup::workloadArgs() const {
  return {"--model",  model,  "--scale", std::to_string(scale),
          "--train",  train,  "--infer", infer,
          "--bucket", bucket, "--chunk", chunk};
}

HeadlineSetup headlineSetup(bool tiny) {
  if (tiny) {
    return {"tiny-moe",
            1,
            "tp=2,pp=2,ep=2",
            "engines=2,tp=2,ep=2",
            "emulated:nodes=4,gpus=2,nic=400Mbps,nics=1",
            "64KiB",
            "16KiB",
            1};
  }
  // The run of docs/sync.md ("Measured results"): its bounds predict 1.76x.
  return {"kimi-k2",
          128,
          "tp=2,pp=4,ep=2",
          "engines=2,tp=4,ep=4,dp_attn=2",
          "emulated:nodes=8,gpus=2,nic=100Mbps,nics=1",
          "8MiB",
          "256KiB",
          2};
}

void addHeadlineParts(const SetOptions& o, const std::string& netnsSkip, std::vector<Part>& parts) {
  const HeadlineSetup h = headlineSetup(o.tinyHeadline);
  const std::string d = o.partDir + "/";
  const bool tiny = o.tinyHeadline;
  for (const char* s : kHeadlineStrategies) {
    // The plan file (tens of MB at Kimi-K2 / 128) is the simulator's input,
    // not a document of results.h5.
    Part p{partName("plan", s),
           std::string("headline: the plan of the real run and its lower bound: ") + s,
           {o.tide, "plan"},
           tiny ? 2.0 : 10.0,
           600,
           "",
           {},
           {}};
    for (const auto& a : h.workloadArgs()) p.argv.push_back(a);
    for (const auto& a : {std::string("--cluster"), h.cluster, std::string("--strategy"),
                          std::string(s), std::string("--json"), d + p.name + ".json"})
      p.argv.push_back(a);
    parts.push_back(std::move(p));
  }
  // What each real run takes at Kimi-K2 / 128, for the ETA: broadcast, p2p.
  constexpr double kSyncSeconds[] = {45.0, 30.0};
  static_assert(std::size(kSyncSeconds) == std::size(kHeadlineStrategies));
  for (size_t i = 0; i < std::size(kHeadlineStrategies); ++i) {
    const char* s = kHeadlineStrategies[i];
    const std::string n = partName("sync", s);
    Part p{n,
           std::string("headline: real weight update on the emulated cluster, verified: ") + s,
           {o.tide, "sync"},
           tiny ? 5.0 : kSyncSeconds[i],
           900,
           netnsSkip,
           {{"result", d + n + ".json"}},
           {{s, d + n + "_events.h5"}}};
    // The recorded plan, the one the simulator prices below: one plan
    // through both executors.
    for (const auto& a :
         {std::string("--plan"), d + partName("plan", s) + ".json", std::string("--cluster"),
          h.cluster, std::string("--steps"), std::to_string(h.steps), std::string("--json"),
          d + n + ".json", std::string("--events"), d + n + "_events.h5",
          std::string("--trace-out"), o.outDir + "/" + timelineFile("real", s)})
      p.argv.push_back(a);
    parts.push_back(std::move(p));
  }
  for (const char* s : kHeadlineStrategies) {
    const std::string n = partName("sim", s);
    parts.push_back(
        {n,
         std::string("headline: the simulator on the same plan and cluster spec: ") + s,
         {o.tide, "sim", "--plan", d + partName("plan", s) + ".json", "--cluster", h.cluster,
          "--json", d + n + ".json", "--trace-out", o.outDir + "/" + timelineFile("sim", s)},
         tiny ? 2.0 : 10.0,
         600,
         "",
         {{"result", d + n + ".json"}},
         {}});
  }
}

json headlineJson(const ReportInput& in) {
  const HeadlineSetup s = headlineSetup(in.tinyHeadline);
  json h;
  h["setup"] = {{"model", s.model}, {"scale", s.scale},     {"train", s.train},
                {"infer", s.infer}, {"cluster", s.cluster}, {"bucket", s.bucket},
                {"chunk", s.chunk}, {"steps", s.steps},     {"backend", "tcp"}};
  json status;
  h["real"] = realSide(in, &status);
  h.update(status);
  json real0 = h["real"].is_object() ? partDocument(in, partName("sync", "broadcast")) : json();
  json real1 = h["real"].is_object() ? partDocument(in, partName("sync", "p2p")) : json();
  std::string why;
  h["sim_same_cluster"] = simSameCluster(in, real0, real1, &why);
  if (!why.empty()) h["sim_same_cluster_reason"] = why;
  why.clear();
  h["sim_full_scale"] = simFullScale(in, &why);
  if (!why.empty()) h["sim_full_scale_reason"] = why;
  h["published"] = publishedSide(in);
  // The timelines its parts wrote (units of each plan, real and simulated).
  h["timelines"] = json::array();
  for (const char* s : kHeadlineStrategies) {
    for (const char* side : {"real", "sim"}) {
      if (statusOf(in, partName(side == std::string("real") ? "sync" : "sim", s)) != "ok") continue;
      h["timelines"].push_back({{"file", timelineFile(side, s)}, {"side", side}, {"strategy", s}});
    }
  }
  return h;
}

std::string headlineMarkdown(const json& h) {
  const json& set = h["setup"];
  const json& real = h["real"];
  const json& sim = h["sim_same_cluster"];
  const json& full = h["sim_full_scale"];
  const json& pub = h["published"];
  std::string md = "## Headline: p2p vs broadcast weight update, real and simulated\n\n";
  md += fmt::format(
      "Real run: `{}` at `--scale {}`, training `{}` → inference `{}`, on `{}` (one network "
      "namespace per node, tc-shaped links), tcp, bf16, bucket {}, chunk {}, {} update(s) per "
      "strategy; time = median step. Beside it the simulator on the same plan and cluster "
      "spec, and the full-scale Kimi-K2 simulation against the published figures.\n\n",
      set.value("model", ""), set.value("scale", 0), set.value("train", ""), set.value("infer", ""),
      set.value("cluster", ""), set.value("bucket", ""), set.value("chunk", ""),
      set.value("steps", 0));
  md += "| | broadcast | p2p | broadcast / p2p |\n|---|---:|---:|---:|\n";
  if (real.is_object()) {
    md += fmt::format("| **real run, measured** | {} | {} | **{}** |\n", secs(real, "broadcast_s"),
                      secs(real, "p2p_s"), times(real));
    auto bound = [&](const char* s) {
      return fmt::format("{:.3f} s ({})", real["lower_bound_s"].value(s, 0.0),
                         real["bottleneck"].value(s, ""));
    };
    md += fmt::format("| lower bound of the plan (bottleneck link) | {} | {} | {} |\n",
                      bound("broadcast"), bound("p2p"), times(real, "bound_speedup"));
    const double over = real.value("bound_speedup", 0.0) > 0
                            ? real.value("speedup", 0.0) / real.value("bound_speedup", 0.0)
                            : 0.0;
    md += fmt::format("| measured / bound | {:.2f} | {:.2f} | speed-up / bound ratio {:.2f} |\n",
                      real["ratio_to_bound"].value("broadcast", 0.0),
                      real["ratio_to_bound"].value("p2p", 0.0), over);
    md += fmt::format("| verification (tide sync, every inference byte) | {} | {} | |\n",
                      real["verification"].value("broadcast", "?"),
                      real["verification"].value("p2p", "?"));
  } else {
    std::string why =
        oneLine(h.value("real_status", "not run") + ": " + h.value("real_reason", ""));
    md += fmt::format("| **real run, measured** | {} | {} | — |\n", why, why);
  }
  if (sim.is_object()) {
    auto cell = [&](const char* s) {
      std::string c = secs(sim, std::string(s) + "_s");
      if (real.is_object() && real.value(std::string(s) + "_s", 0.0) > 0) {
        c += fmt::format(
            " ({:+.1f} % vs real)",
            (sim.value(std::string(s) + "_s", 0.0) / real.value(std::string(s) + "_s", 0.0) - 1) *
                100);
      }
      const json& v = sim.contains("validation") ? sim["validation"] : json();
      if (v.is_object() && v.contains(s) && v[s].contains("refused"))
        c += " — " + oneLine(v[s].value("refused", ""));
      return c;
    };
    md += fmt::format("| simulator, same plan on the same cluster spec | {} | {} | {} |\n",
                      cell("broadcast"), cell("p2p"), times(sim));
  } else {
    std::string why = oneLine(h.value("sim_same_cluster_reason", ""));
    md += "| simulator, same plan on the same cluster spec | " + why + " | " + why + " | — |\n";
  }
  if (full.is_object()) {
    md += fmt::format("| simulator, full-scale Kimi-K2 (`{}`, `{}`) | {} | {} | {} |\n",
                      full["strategy"].value("broadcast", ""), full["strategy"].value("p2p", ""),
                      secs(full, "broadcast_s"), secs(full, "p2p_s"), times(full));
  } else {
    std::string why = oneLine(h.value("sim_full_scale_reason", ""));
    md += "| simulator, full-scale Kimi-K2 | " + why + " | " + why + " | — |\n";
  }
  if (pub.is_object()) {
    md += fmt::format("| published, full-scale Kimi-K2 | {} | {} | {} |\n",
                      secs(pub, "broadcast_s"), secs(pub, "p2p_s"), times(pub));
  }
  md += "\n";
  if (h.contains("timelines") && !h["timelines"].empty()) {
    md +=
        "Each plan's units as they ran, on a timeline (Chrome trace-event JSON: open it in "
        "Perfetto UI or chrome://tracing; docs/formats/timeline.md):";
    for (const auto& t : h["timelines"]) {
      md += fmt::format(" [{}]({}) ({} {})", t.value("file", ""), t.value("file", ""),
                        t.value("side", ""), t.value("strategy", ""));
    }
    md += ".\n\n";
  }
  return md;
}

}  // namespace tide::harness::reproduce
