#include "traces/trace_file.h"

#include <cmath>
#include <sstream>

#include "traces/events_io.h"
#include "traces/hdf5_util.h"
#include "workloads/tensor.h"

namespace tide::traces {

namespace {

using h5::Handle;

Status bad(const std::string& what) {
  return TIDE_ERROR(Code::kDataLoss, what);
}

Status writeMeta(hid_t file, const TraceData& d) {
  TIDE_ASSIGN_OR_RETURN(Handle g, h5::createGroup(file, "meta"));
  const TraceMeta& m = d.meta;
  const hid_t id = g.get();
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "model", m.model));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "scale", int64_t{m.scale}));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "steps", int64_t{m.steps}));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "seed", static_cast<int64_t>(m.seed)));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "train_layout", m.trainLayout));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "infer_layout", m.inferLayout));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "generator", m.generator));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "total_params", static_cast<int64_t>(m.totalParams)));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "lr", m.rl.lr));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "beta1", m.rl.beta1));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "beta2", m.rl.beta2));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "eps", m.rl.eps));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "weight_decay", m.rl.weightDecay));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "grad_std", m.rl.gradStd));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "grad_signal", m.rl.signal));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "skip_no_grad", int64_t{m.rl.skipNoGrad ? 1 : 0}));
  TIDE_RETURN_IF_ERROR(
      h5::writeAttr(id, "tokens_per_step", static_cast<int64_t>(m.routing.tokensPerStep)));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "routing_zipf", m.routing.zipf));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "routing_jitter", m.routing.jitter));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(id, "samples_per_step", int64_t{m.rollout.samplesPerStep}));
  const TensorTable& t = d.tensors;
  const uint64_t n = t.size();
  TIDE_RETURN_IF_ERROR(h5::writeStrings(id, "tensor_name", t.names));
  TIDE_RETURN_IF_ERROR(h5::writeDataset(id, "tensor_numel", {n}, t.numel));
  TIDE_RETURN_IF_ERROR(h5::writeDataset(id, "tensor_kind", {n}, t.kind));
  TIDE_RETURN_IF_ERROR(h5::writeDataset(id, "tensor_layer", {n}, t.layer));
  TIDE_RETURN_IF_ERROR(h5::writeDataset(id, "tensor_expert", {n}, t.expert));
  std::string kinds;
  for (int k = 0; k <= static_cast<int>(workloads::TensorKind::kLmHead); ++k) {
    kinds +=
        (k ? "," : "") + std::string(workloads::kindName(static_cast<workloads::TensorKind>(k)));
  }
  return h5::writeAttr(id, "kind_names", kinds);
}

Status writeRouting(hid_t file, const workloads::RoutingTrace& r) {
  TIDE_ASSIGN_OR_RETURN(Handle g, h5::createGroup(file, "routing"));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "first_moe_layer", int64_t{r.firstMoeLayer}));
  return h5::writeDataset(g.get(), "counts",
                          {static_cast<uint64_t>(r.steps), static_cast<uint64_t>(r.moeLayers),
                           static_cast<uint64_t>(r.experts)},
                          r.counts);
}

Status writeDelta(hid_t file, const workloads::ChangeStats& c, uint64_t tensors) {
  TIDE_ASSIGN_OR_RETURN(Handle g, h5::createGroup(file, "delta"));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "exact", int64_t{c.exact ? 1 : 0}));
  TIDE_RETURN_IF_ERROR(
      h5::writeAttr(g.get(), "sample_per_tensor", static_cast<int64_t>(c.samplePerTensor)));
  // Worst-case (p = 1/2) binomial 95 % half-width of one tensor's fraction in one step.
  const double hw = c.exact || c.samplePerTensor == 0
                        ? 0.0
                        : 0.98 / std::sqrt(static_cast<double>(c.samplePerTensor));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "halfwidth95_worst", hw));
  TIDE_RETURN_IF_ERROR(h5::writeDataset(g.get(), "checked", {tensors}, c.checked));
  TIDE_RETURN_IF_ERROR(h5::writeDataset(g.get(), "ever_changed", {tensors}, c.everChanged));
  if (!c.indexOffsets.empty()) {
    TIDE_RETURN_IF_ERROR(
        h5::writeDataset(g.get(), "index_offsets", {c.indexOffsets.size()}, c.indexOffsets));
    if (!c.changedIndices.empty()) {
      TIDE_RETURN_IF_ERROR(
          h5::writeDataset(g.get(), "indices", {c.changedIndices.size()}, c.changedIndices));
    }
  }
  return h5::writeDataset(g.get(), "changed", {static_cast<uint64_t>(c.steps), tensors},
                          c.changedSampled);
}

// The optional exact changed indices: offsets agree with the counts, indices
// ascend within a (step, tensor) and stay inside the tensor.
Status readIndices(hid_t g, TraceData& d) {
  auto& c = d.delta;
  const uint64_t nt = d.tensors.size();
  const uint64_t cells = static_cast<uint64_t>(c.steps) * nt;
  TIDE_ASSIGN_OR_RETURN(c.indexOffsets, h5::readDataset<uint64_t>(g, "index_offsets", {cells + 1}));
  if (!c.exact) return bad("/delta/index_offsets in a sampled trace");
  if (c.indexOffsets.back() > 0) {
    TIDE_ASSIGN_OR_RETURN(c.changedIndices,
                          h5::readDataset<uint32_t>(g, "indices", {c.indexOffsets.back()}));
  }
  if (c.indexOffsets[0] != 0) return bad("/delta/index_offsets must start at 0");
  // All offsets first: a later one that falls back would leave an earlier
  // range past the end of the indices read.
  for (uint64_t i = 0; i < cells; ++i) {
    const uint64_t a = c.indexOffsets[i], b = c.indexOffsets[i + 1];
    if (b < a || b - a != c.changedSampled[i]) {
      return bad("/delta/index_offsets[" + std::to_string(i) + "] disagrees with /delta/changed");
    }
  }
  if (c.changedIndices.size() != c.indexOffsets.back())
    return bad("/delta/indices does not hold the elements /delta/index_offsets counts");
  for (uint64_t i = 0; i < cells; ++i) {
    const uint64_t a = c.indexOffsets[i], b = c.indexOffsets[i + 1];
    const uint64_t numel = d.tensors.numel[i % nt];
    for (uint64_t k = a; k < b; ++k) {
      if (c.changedIndices[k] >= numel ||
          (k > a && c.changedIndices[k] <= c.changedIndices[k - 1])) {
        return bad("/delta/indices[" + std::to_string(k) + "] out of range or out of order");
      }
    }
  }
  return Status::ok();
}

Status writeRollout(hid_t file, const std::vector<std::vector<workloads::RolloutSample>>& r) {
  TIDE_ASSIGN_OR_RETURN(Handle g, h5::createGroup(file, "rollout"));
  const uint64_t steps = r.size(), samples = r.empty() ? 0 : r[0].size();
  std::vector<uint32_t> prompt, response;
  std::vector<double> start, end;
  for (const auto& step : r) {
    if (step.size() != samples) return TIDE_ERROR(Code::kInternal, "ragged rollout");
    for (const auto& s : step) {
      prompt.push_back(s.promptTokens);
      response.push_back(s.responseTokens);
      start.push_back(s.startS);
      end.push_back(s.endS);
    }
  }
  TIDE_RETURN_IF_ERROR(h5::writeDataset(g.get(), "prompt_tokens", {steps, samples}, prompt));
  TIDE_RETURN_IF_ERROR(h5::writeDataset(g.get(), "response_tokens", {steps, samples}, response));
  TIDE_RETURN_IF_ERROR(h5::writeDataset(g.get(), "start_s", {steps, samples}, start));
  return h5::writeDataset(g.get(), "end_s", {steps, samples}, end);
}

template <typename T>
Result<T> attr(hid_t g, const char* name);
template <>
Result<int64_t> attr<int64_t>(hid_t g, const char* name) {
  return h5::readIntAttr(g, name);
}
template <>
Result<double> attr<double>(hid_t g, const char* name) {
  auto v = h5::readDoubleAttr(g, name);
  if (v.isOk() && !std::isfinite(*v)) return bad(std::string("/meta ") + name + " is not finite");
  return v;
}

Status readMeta(hid_t file, TraceData& d) {
  TIDE_ASSIGN_OR_RETURN(Handle g, h5::openGroup(file, "meta"));
  const hid_t id = g.get();
  TraceMeta& m = d.meta;
  TIDE_ASSIGN_OR_RETURN(m.model, h5::readStringAttr(id, "model"));
  TIDE_ASSIGN_OR_RETURN(int64_t scale, attr<int64_t>(id, "scale"));
  TIDE_ASSIGN_OR_RETURN(int64_t steps, attr<int64_t>(id, "steps"));
  TIDE_ASSIGN_OR_RETURN(int64_t seed, attr<int64_t>(id, "seed"));
  if (scale < 1 || scale > (1 << 20)) return bad("/meta scale out of range");
  if (steps < 0 || steps > (1 << 24)) return bad("/meta steps out of range");
  m.scale = static_cast<int>(scale);
  m.steps = static_cast<int>(steps);
  m.seed = static_cast<uint64_t>(seed);
  TIDE_ASSIGN_OR_RETURN(m.trainLayout, h5::readStringAttr(id, "train_layout"));
  TIDE_ASSIGN_OR_RETURN(m.inferLayout, h5::readStringAttr(id, "infer_layout"));
  TIDE_ASSIGN_OR_RETURN(m.generator, h5::readStringAttr(id, "generator"));
  TIDE_ASSIGN_OR_RETURN(int64_t total, attr<int64_t>(id, "total_params"));
  m.totalParams = static_cast<uint64_t>(total);
  TIDE_ASSIGN_OR_RETURN(m.rl.lr, attr<double>(id, "lr"));
  TIDE_ASSIGN_OR_RETURN(m.rl.beta1, attr<double>(id, "beta1"));
  TIDE_ASSIGN_OR_RETURN(m.rl.beta2, attr<double>(id, "beta2"));
  TIDE_ASSIGN_OR_RETURN(m.rl.eps, attr<double>(id, "eps"));
  TIDE_ASSIGN_OR_RETURN(m.rl.weightDecay, attr<double>(id, "weight_decay"));
  TIDE_ASSIGN_OR_RETURN(m.rl.gradStd, attr<double>(id, "grad_std"));
  TIDE_ASSIGN_OR_RETURN(m.rl.signal, attr<double>(id, "grad_signal"));
  TIDE_ASSIGN_OR_RETURN(int64_t skip, attr<int64_t>(id, "skip_no_grad"));
  m.rl.skipNoGrad = skip != 0;
  m.rl.seed = m.seed;
  TIDE_ASSIGN_OR_RETURN(int64_t tps, attr<int64_t>(id, "tokens_per_step"));
  m.routing.tokensPerStep = static_cast<uint64_t>(tps);
  TIDE_ASSIGN_OR_RETURN(m.routing.zipf, attr<double>(id, "routing_zipf"));
  TIDE_ASSIGN_OR_RETURN(m.routing.jitter, attr<double>(id, "routing_jitter"));
  m.routing.seed = m.seed;
  TIDE_ASSIGN_OR_RETURN(int64_t sps, attr<int64_t>(id, "samples_per_step"));
  m.rollout.samplesPerStep = static_cast<int>(sps);
  m.rollout.seed = m.seed;
  TensorTable& t = d.tensors;
  TIDE_ASSIGN_OR_RETURN(t.names, h5::readStrings(id, "tensor_name"));
  const std::vector<uint64_t> shape{t.names.size()};
  TIDE_ASSIGN_OR_RETURN(t.numel, h5::readDataset<uint64_t>(id, "tensor_numel", shape));
  TIDE_ASSIGN_OR_RETURN(t.kind, h5::readDataset<uint8_t>(id, "tensor_kind", shape));
  TIDE_ASSIGN_OR_RETURN(t.layer, h5::readDataset<int32_t>(id, "tensor_layer", shape));
  TIDE_ASSIGN_OR_RETURN(t.expert, h5::readDataset<int32_t>(id, "tensor_expert", shape));
  uint64_t sum = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.kind[i] > static_cast<uint8_t>(workloads::TensorKind::kLmHead)) {
      return bad("/meta/tensor_kind[" + std::to_string(i) + "] is not a known kind");
    }
    sum += t.numel[i];
  }
  if (sum != m.totalParams) {
    return bad("/meta total_params " + std::to_string(m.totalParams) + " != sum of tensor_numel " +
               std::to_string(sum));
  }
  return Status::ok();
}

Status readRouting(hid_t file, TraceData& d) {
  TIDE_ASSIGN_OR_RETURN(Handle g, h5::openGroup(file, "routing"));
  TIDE_ASSIGN_OR_RETURN(h5::DatasetInfo info, h5::datasetInfo(g.get(), "counts"));
  if (info.shape.size() != 3 || info.shape[0] != static_cast<uint64_t>(d.meta.steps)) {
    return bad("/routing/counts must have shape (steps=" + std::to_string(d.meta.steps) +
               ", moe_layers, experts)");
  }
  if (info.shape[1] > 4096 || info.shape[2] > 65536) return bad("/routing/counts is implausible");
  TIDE_ASSIGN_OR_RETURN(int64_t first, h5::readIntAttr(g.get(), "first_moe_layer"));
  auto& r = d.routing;
  r.steps = d.meta.steps;
  r.moeLayers = static_cast<int>(info.shape[1]);
  r.experts = static_cast<int>(info.shape[2]);
  r.firstMoeLayer = static_cast<int>(first);
  if (first < 0 || first > 4096) return bad("/routing first_moe_layer out of range");
  TIDE_ASSIGN_OR_RETURN(r.counts, h5::readDataset<uint32_t>(g.get(), "counts", info.shape));
  // Every expert id in the tensor table must exist in the routing.
  for (size_t i = 0; i < d.tensors.size(); ++i) {
    if (d.tensors.expert[i] >= r.experts && r.experts > 0) {
      return bad("/meta/tensor_expert[" + std::to_string(i) + "] exceeds routing experts");
    }
  }
  return Status::ok();
}

Status readDelta(hid_t file, TraceData& d) {
  TIDE_ASSIGN_OR_RETURN(Handle g, h5::openGroup(file, "delta"));
  const uint64_t nt = d.tensors.size();
  auto& c = d.delta;
  c.steps = d.meta.steps;
  TIDE_ASSIGN_OR_RETURN(int64_t exact, h5::readIntAttr(g.get(), "exact"));
  TIDE_ASSIGN_OR_RETURN(int64_t sample, h5::readIntAttr(g.get(), "sample_per_tensor"));
  if (sample < 0) return bad("/delta sample_per_tensor is negative");
  c.exact = exact != 0;
  c.samplePerTensor = static_cast<uint64_t>(sample);
  TIDE_ASSIGN_OR_RETURN(c.checked, h5::readDataset<uint64_t>(g.get(), "checked", {nt}));
  TIDE_ASSIGN_OR_RETURN(c.everChanged, h5::readDataset<uint64_t>(g.get(), "ever_changed", {nt}));
  TIDE_ASSIGN_OR_RETURN(
      c.changedSampled,
      h5::readDataset<uint32_t>(g.get(), "changed", {static_cast<uint64_t>(c.steps), nt}));
  for (size_t t = 0; t < nt; ++t) {
    if (c.checked[t] > d.tensors.numel[t] || c.everChanged[t] > c.checked[t] ||
        (c.exact && c.checked[t] != d.tensors.numel[t])) {
      return bad("/delta: inconsistent counts for tensor " + d.tensors.names[t]);
    }
    for (int s = 0; s < c.steps; ++s) {
      if (c.changedSampled[static_cast<size_t>(s) * nt + t] > c.checked[t]) {
        return bad("/delta/changed[" + std::to_string(s) + "][" + std::to_string(t) +
                   "] exceeds the elements checked");
      }
    }
  }
  if (h5::exists(g.get(), "index_offsets")) return readIndices(g.get(), d);
  return Status::ok();
}

Status readRollout(hid_t file, TraceData& d) {
  TIDE_ASSIGN_OR_RETURN(Handle g, h5::openGroup(file, "rollout"));
  TIDE_ASSIGN_OR_RETURN(h5::DatasetInfo info, h5::datasetInfo(g.get(), "prompt_tokens"));
  if (info.shape.size() != 2 || info.shape[0] != static_cast<uint64_t>(d.meta.steps)) {
    return bad("/rollout/prompt_tokens must have shape (steps, samples)");
  }
  const auto shape = info.shape;
  TIDE_ASSIGN_OR_RETURN(auto prompt, h5::readDataset<uint32_t>(g.get(), "prompt_tokens", shape));
  TIDE_ASSIGN_OR_RETURN(auto resp, h5::readDataset<uint32_t>(g.get(), "response_tokens", shape));
  TIDE_ASSIGN_OR_RETURN(auto start, h5::readDataset<double>(g.get(), "start_s", shape));
  TIDE_ASSIGN_OR_RETURN(auto end, h5::readDataset<double>(g.get(), "end_s", shape));
  d.rollout.assign(shape[0], std::vector<workloads::RolloutSample>(shape[1]));
  for (size_t s = 0, k = 0; s < shape[0]; ++s) {
    for (size_t i = 0; i < shape[1]; ++i, ++k) {
      if (!std::isfinite(start[k]) || !std::isfinite(end[k]) || end[k] < start[k] || start[k] < 0) {
        return bad("/rollout: sample " + std::to_string(i) + " of step " + std::to_string(s) +
                   " has non-finite or reversed times");
      }
      d.rollout[s][i] = {prompt[k], resp[k], start[k], end[k]};
    }
  }
  return Status::ok();
}

}  // namespace

Status writeTrace(const std::string& path, const TraceData& d) {
  std::lock_guard<std::recursive_mutex> lib(h5::libraryMutex());
  if (d.tensors.numel.size() != d.tensors.size() || d.tensors.kind.size() != d.tensors.size() ||
      d.tensors.layer.size() != d.tensors.size() || d.tensors.expert.size() != d.tensors.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "tensor table columns differ in length");
  }
  TIDE_RETURN_IF_ERROR(d.routing.validate());
  TIDE_ASSIGN_OR_RETURN(Handle f, h5::createFile(path));
  TIDE_RETURN_IF_ERROR(detail::writeSchemaAttrs(f.get()));
  TIDE_RETURN_IF_ERROR(writeMeta(f.get(), d));
  TIDE_RETURN_IF_ERROR(writeRouting(f.get(), d.routing));
  TIDE_RETURN_IF_ERROR(writeDelta(f.get(), d.delta, d.tensors.size()));
  TIDE_RETURN_IF_ERROR(writeRollout(f.get(), d.rollout));
  TIDE_RETURN_IF_ERROR(detail::createEventsGroup(f.get()));
  TIDE_RETURN_IF_ERROR(detail::appendEvents(f.get(), d.events));
  if (H5Fflush(f.get(), H5F_SCOPE_LOCAL) < 0) {
    return TIDE_ERROR(Code::kDataLoss, "cannot flush " + path);
  }
  return Status::ok();
}

Result<TraceData> readTrace(const std::string& path, const ReadOptions& opts) {
  std::lock_guard<std::recursive_mutex> lib(h5::libraryMutex());
  TIDE_ASSIGN_OR_RETURN(Handle f, h5::openFile(path, false));
  TIDE_RETURN_IF_ERROR(detail::checkSchema(f.get(), path));
  TraceData d;
  Status s = readMeta(f.get(), d);
  if (s.isOk()) s = readRouting(f.get(), d);
  if (s.isOk()) s = readDelta(f.get(), d);
  if (s.isOk() && opts.rollout) s = readRollout(f.get(), d);
  if (s.isOk() && opts.events) {
    auto ev = detail::readEvents(f.get());
    if (ev.isOk()) {
      d.events = std::move(ev).value();
    } else {
      s = ev.status();
    }
  }
  if (!s.isOk()) return s.withContext(path);
  return d;
}

std::string describeTrace(const TraceData& d) {
  std::ostringstream o;
  const auto& m = d.meta;
  o << "schema        tide-trace v" << kSchemaVersion << "\n";
  o << "model         " << m.model << " (scale " << m.scale << ", " << m.totalParams << " params, "
    << d.tensors.size() << " tensors)\n";
  o << "steps         " << m.steps << ", seed " << m.seed << "\n";
  o << "layouts       train " << (m.trainLayout.empty() ? "-" : m.trainLayout) << "; infer "
    << (m.inferLayout.empty() ? "-" : m.inferLayout) << "\n";
  o << "optimizer     AdamW lr " << m.rl.lr << " betas (" << m.rl.beta1 << ", " << m.rl.beta2
    << ") wd " << m.rl.weightDecay << "\n";
  o << "routing       " << d.routing.moeLayers << " MoE layers x " << d.routing.experts
    << " experts, " << m.routing.tokensPerStep << " tokens/step, zipf " << m.routing.zipf << "\n";
  const auto& c = d.delta;
  o << "delta         "
    << (c.exact ? "exact"
                : "sampled (" + std::to_string(c.samplePerTensor) + " elements per tensor)")
    << "\n";
  // Overall changed fraction per step, weighted by tensor size.
  const size_t nt = d.tensors.size();
  double total = 0;
  for (size_t t = 0; t < nt; ++t) total += static_cast<double>(d.tensors.numel[t]);
  double sumFrac = 0;
  for (int s = 1; s <= c.steps; ++s) {
    double changed = 0;
    for (size_t t = 0; t < nt; ++t) {
      changed += c.fraction(s, static_cast<uint32_t>(t)) * static_cast<double>(d.tensors.numel[t]);
    }
    sumFrac += total > 0 ? changed / total : 0;
  }
  if (c.steps > 0) {
    o << "changed/step  " << 100.0 * sumFrac / c.steps << " % of parameters (mean over steps)\n";
  }
  size_t samples = d.rollout.empty() ? 0 : d.rollout[0].size();
  o << "rollout       " << d.rollout.size() << " steps x " << samples << " samples\n";
  o << "events        " << d.events.size() << "\n";
  return o.str();
}

}  // namespace tide::traces
