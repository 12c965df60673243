#include "workloads/layout.h"

#include <algorithm>
#include <map>

#include "engine/core/units.h"

namespace tide::workloads {

namespace {

Status badLayout(const std::string& what) {
  return TIDE_ERROR(Code::kInvalidArgument, what);
}

// "a=1,b=2" -> map; rejects empty items, duplicate or unknown keys.
Result<std::map<std::string, std::string>> parseKv(std::string_view text,
                                                   const std::vector<std::string>& known,
                                                   const char* what) {
  std::map<std::string, std::string> kv;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) {
      if (comma == text.size() && !kv.empty()) break;
      return badLayout(std::string(what) + " '" + std::string(text) + "': empty item");
    }
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return badLayout(std::string(what) + ": '" + std::string(item) + "' is not key=value");
    }
    std::string key(item.substr(0, eq));
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string k;
      for (const auto& n : known) k += (k.empty() ? "" : ", ") + n;
      return badLayout(std::string(what) + ": unknown key '" + key + "' (known: " + k + ")");
    }
    if (kv.count(key)) return badLayout(std::string(what) + ": '" + key + "' given twice");
    kv[key] = std::string(item.substr(eq + 1));
  }
  return kv;
}

Result<int> parseDegree(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  if (it == kv.end()) return 1;
  auto v = parseCount(it->second);
  if (!v.isOk() || *v == 0 || *v > (1u << 20)) {
    return badLayout("'" + key + "=" + it->second + "': must be an integer in 1..1048576");
  }
  return static_cast<int>(*v);
}

// Every TP-split tensor of the model must split evenly over `size` ranks
// (whole units, or units replicated when there are fewer units than ranks).
Status checkSplit(const TensorSpec& t, int size, const std::string& group) {
  if (t.tp == TpSplit::kReplicated || size == 1) return Status::ok();
  size_t dim = t.tp == TpSplit::kColumn ? 0 : 1;
  if (t.shape.size() <= dim) return Status::ok();
  uint64_t units = t.shape[dim] / t.tpUnit;
  uint64_t n = static_cast<uint64_t>(size);
  if (units % n == 0 || n % units == 0) return Status::ok();
  return badLayout(group + "=" + std::to_string(size) + " does not divide " + t.name + " dim " +
                   std::to_string(dim) + " (" + std::to_string(units) +
                   (t.tpUnit > 1 ? " heads" : " elements") + ")");
}

// The tensors of the first dense and first MoE layer plus embeddings: every
// distinct shape of the model, without building 70 k expert tensors.
ModelInventory representative(const ModelSpec& m) {
  ModelSpec small = m;
  small.layers = std::min(m.layers, m.firstDenseLayers + 1);
  small.experts = std::min(m.experts, 1);
  small.topK = std::min(m.topK, 1);
  return buildInventory(small);
}

}  // namespace

std::string TrainLayout::toString() const {
  std::string s = "tp=" + std::to_string(tp) + ",pp=" + std::to_string(pp) +
                  ",cp=" + std::to_string(cp) + ",ep=" + std::to_string(ep) +
                  ",etp=" + std::to_string(etp) + ",dp=" + std::to_string(dp);
  if (fsdp > 1) s += ",fsdp=" + std::to_string(fsdp);
  if (!stageLayers.empty()) {
    s += ",stages=";
    for (size_t i = 0; i < stageLayers.size(); ++i) {
      s += (i ? ":" : "") + std::to_string(stageLayers[i]);
    }
  }
  return s;
}

std::string InferLayout::toString() const {
  std::string s = "engines=" + std::to_string(engines) + ",tp=" + std::to_string(tp) +
                  ",ep=" + std::to_string(ep) + ",dp_attn=" + std::to_string(dpAttn);
  if (dpLmHead) s += ",dp_lm_head=1";
  if (denseWhole) s += ",dense_tp=1";
  return s;
}

InferSplit inferSplit(const TensorSpec& t, const InferLayout& l) {
  if (t.tp == TpSplit::kReplicated) return {1, "replicated"};
  switch (t.kind) {
    case TensorKind::kRoutedExpert:
      return {l.moeTp(), "tp/ep"};
    case TensorKind::kEmbedding:
      if (l.dpAttn > 1) return {1, "replicated (dp_attn)"};
      break;
    case TensorKind::kLmHead:
      if (l.dpLmHead) return {l.attnTp(), "tp/dp_attn"};
      break;
    case TensorKind::kDenseMlp:
      if (l.denseWhole) return {1, "dense_tp"};
      break;
    default:
      if (t.dpAttnReplicated) return {l.attnTp(), "tp/dp_attn"};
      break;
  }
  return {l.tp, "tp"};
}

double inferFraction(const TensorSpec& t, const InferLayout& l) {
  if (t.kind == TensorKind::kRoutedExpert) return 1.0 / l.tp;
  return 1.0 / inferSplit(t, l).size;
}

Result<TrainLayout> parseTrainLayout(std::string_view text) {
  TIDE_ASSIGN_OR_RETURN(
      auto kv,
      parseKv(text, {"tp", "pp", "cp", "ep", "etp", "dp", "fsdp", "stages"}, "training layout"));
  TrainLayout l;
  TIDE_ASSIGN_OR_RETURN(l.tp, parseDegree(kv, "tp"));
  TIDE_ASSIGN_OR_RETURN(l.pp, parseDegree(kv, "pp"));
  TIDE_ASSIGN_OR_RETURN(l.cp, parseDegree(kv, "cp"));
  TIDE_ASSIGN_OR_RETURN(l.ep, parseDegree(kv, "ep"));
  TIDE_ASSIGN_OR_RETURN(l.etp, parseDegree(kv, "etp"));
  TIDE_ASSIGN_OR_RETURN(l.dp, parseDegree(kv, "dp"));
  TIDE_ASSIGN_OR_RETURN(l.fsdp, parseDegree(kv, "fsdp"));
  if (auto it = kv.find("stages"); it != kv.end()) {
    std::string_view s = it->second;
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t c = s.find(':', pos);
      if (c == std::string_view::npos) c = s.size();
      auto v = parseCount(s.substr(pos, c - pos));
      if (!v.isOk() || *v == 0 || *v > 4096) {
        return badLayout("stages='" + std::string(s) + "': want layer counts >= 1 like 8:8:5");
      }
      l.stageLayers.push_back(static_cast<int>(*v));
      pos = c + 1;
    }
  }
  return l;
}

Result<InferLayout> parseInferLayout(std::string_view text) {
  TIDE_ASSIGN_OR_RETURN(auto kv,
                        parseKv(text, {"engines", "tp", "ep", "dp_attn", "dp_lm_head", "dense_tp"},
                                "inference layout"));
  InferLayout l;
  TIDE_ASSIGN_OR_RETURN(l.engines, parseDegree(kv, "engines"));
  TIDE_ASSIGN_OR_RETURN(l.tp, parseDegree(kv, "tp"));
  TIDE_ASSIGN_OR_RETURN(l.ep, parseDegree(kv, "ep"));
  TIDE_ASSIGN_OR_RETURN(l.dpAttn, parseDegree(kv, "dp_attn"));
  if (auto it = kv.find("dp_lm_head"); it != kv.end()) {
    if (it->second != "0" && it->second != "1") {
      return badLayout("'dp_lm_head=" + it->second + "': want 0 or 1");
    }
    l.dpLmHead = it->second == "1";
  }
  if (auto it = kv.find("dense_tp"); it != kv.end()) {
    if (it->second != "1") {
      return badLayout("'dense_tp=" + it->second +
                       "': want 1 (--moe-dense-tp-size 1), or leave it out for the engine's tp");
    }
    l.denseWhole = true;
  }
  return l;
}

std::vector<int> stageLayerCounts(const TrainLayout& l, int layers) {
  if (!l.stageLayers.empty()) return l.stageLayers;
  std::vector<int> counts(static_cast<size_t>(l.pp), 0);
  const int per = (layers + l.pp - 1) / l.pp;
  int left = layers;
  for (int s = 0; s < l.pp; ++s) {
    counts[s] = s + 1 < l.pp ? std::min(per, left) : left;
    left -= counts[s];
  }
  return counts;
}

int stageOfLayer(const TrainLayout& l, int layers, int layer) {
  if (layer < 0) return 0;
  auto counts = stageLayerCounts(l, layers);
  int first = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    if (layer < first + counts[s]) return static_cast<int>(s);
    first += counts[s];
  }
  return l.pp - 1;
}

Status validate(const TrainLayout& l, const ModelSpec& m, int worldSize) {
  for (int d : {l.tp, l.pp, l.cp, l.ep, l.etp, l.dp, l.fsdp}) {
    if (d < 1) return badLayout("training layout " + l.toString() + ": degrees must be >= 1");
  }
  const std::string where = "training layout " + l.toString() + " for " + m.name + ": ";
  if (worldSize > 0 && l.worldSize() != worldSize) {
    return badLayout(where + "tp*pp*cp*dp = " + std::to_string(l.worldSize()) + " ranks but " +
                     std::to_string(worldSize) + " GPUs");
  }
  if (m.heads % static_cast<uint64_t>(l.tp) != 0) {
    return badLayout(where + "tp=" + std::to_string(l.tp) + " does not divide " +
                     std::to_string(m.heads) + " heads");
  }
  if (!m.isMoe() && (l.ep > 1 || l.etp > 1)) return badLayout(where + "ep/etp on a dense model");
  if (m.isMoe() && m.experts % l.ep != 0) {
    return badLayout(where + "ep=" + std::to_string(l.ep) + " does not divide " +
                     std::to_string(m.experts) + " experts");
  }
  if ((l.tp * l.cp * l.dp) % (l.etp * l.ep) != 0) {
    return badLayout(where + "etp*ep = " + std::to_string(l.etp * l.ep) +
                     " does not divide tp*cp*dp = " + std::to_string(l.tp * l.cp * l.dp));
  }
  if (l.dp % l.fsdp != 0) {
    return badLayout(where + "fsdp=" + std::to_string(l.fsdp) +
                     " does not divide dp=" + std::to_string(l.dp));
  }
  if (m.isMoe() && l.fsdp > 1 && l.edp() % l.expertFsdp() != 0) {
    return badLayout(where + "fsdp=" + std::to_string(l.fsdp) +
                     " does not divide the expert-DP degree " + std::to_string(l.edp()));
  }
  if (l.pp > m.layers) {
    return badLayout(where + "pp=" + std::to_string(l.pp) + " exceeds " + std::to_string(m.layers) +
                     " layers");
  }
  auto counts = stageLayerCounts(l, m.layers);
  if (static_cast<int>(counts.size()) != l.pp) {
    return badLayout(where + std::to_string(counts.size()) +
                     " stage sizes for pp=" + std::to_string(l.pp));
  }
  int sum = 0;
  for (int c : counts) {
    if (c < 1) return badLayout(where + "a pipeline stage has no layers");
    sum += c;
  }
  if (sum != m.layers) {
    return badLayout(where + "stage layers sum to " + std::to_string(sum) + ", model has " +
                     std::to_string(m.layers));
  }
  ModelInventory inv = representative(m);
  for (const auto& t : inv.tensors) {
    bool expert = t.kind == TensorKind::kRoutedExpert;
    TIDE_RETURN_IF_ERROR(checkSplit(t, expert ? l.etp : l.tp, expert ? "etp" : "tp")
                             .withContext(where.substr(0, where.size() - 2)));
  }
  return Status::ok();
}

Status validate(const InferLayout& l, const ModelSpec& m, int worldSize) {
  for (int d : {l.engines, l.tp, l.ep, l.dpAttn}) {
    if (d < 1) return badLayout("inference layout " + l.toString() + ": degrees must be >= 1");
  }
  const std::string where = "inference layout " + l.toString() + " for " + m.name + ": ";
  if (worldSize > 0 && l.worldSize() != worldSize) {
    return badLayout(where + "engines*tp = " + std::to_string(l.worldSize()) + " ranks but " +
                     std::to_string(worldSize) + " GPUs");
  }
  if (l.tp % l.dpAttn != 0) {
    return badLayout(where + "dp_attn=" + std::to_string(l.dpAttn) +
                     " does not divide tp=" + std::to_string(l.tp));
  }
  if (l.tp % l.ep != 0) {
    return badLayout(where + "ep=" + std::to_string(l.ep) +
                     " does not divide tp=" + std::to_string(l.tp));
  }
  if (!m.isMoe() && l.ep > 1) return badLayout(where + "ep on a dense model");
  if (m.isMoe() && m.experts % l.ep != 0) {
    return badLayout(where + "ep=" + std::to_string(l.ep) + " does not divide " +
                     std::to_string(m.experts) + " experts");
  }
  if (m.heads % static_cast<uint64_t>(l.attnTp()) != 0) {
    return badLayout(where + "attention tp (tp/dp_attn = " + std::to_string(l.attnTp()) +
                     ") does not divide " + std::to_string(m.heads) + " heads");
  }
  if (l.denseWhole && !m.isMoe()) {
    return badLayout(where + "dense_tp=1 (--moe-dense-tp-size) is for the dense layers of a MoE");
  }
  ModelInventory inv = representative(m);
  for (const auto& t : inv.tensors) {
    InferSplit sp = inferSplit(t, l);
    TIDE_RETURN_IF_ERROR(
        checkSplit(t, sp.size, sp.group).withContext(where.substr(0, where.size() - 2)));
  }
  return Status::ok();
}

TrainCoord trainCoord(const TrainLayout& l, int rank) {
  TrainCoord c;
  c.tp = rank % l.tp;
  c.cp = (rank / l.tp) % l.cp;
  c.dp = (rank / (l.tp * l.cp)) % l.dp;
  c.pp = rank / (l.tp * l.cp * l.dp);
  const int local = rank % (l.tp * l.cp * l.dp);
  c.etp = local % l.etp;
  c.ep = (local / l.etp) % l.ep;
  c.edp = local / (l.etp * l.ep);
  return c;
}

InferCoord inferCoord(const InferLayout& l, int rank) {
  InferCoord c;
  c.engine = rank / l.tp;
  c.local = rank % l.tp;
  c.ep = c.local / l.moeTp();
  return c;
}

Box tpSlice(const TensorSpec& t, int rank, int size) {
  Box b = Box::full(t.shape);
  if (t.tp == TpSplit::kReplicated || size <= 1) return b;
  const size_t dim = t.tp == TpSplit::kColumn ? 0 : 1;
  if (t.shape.size() <= dim) return b;
  const uint64_t unit = t.tpUnit ? t.tpUnit : 1;
  const uint64_t units = t.shape[dim] / unit;
  const uint64_t n = static_cast<uint64_t>(size), r = static_cast<uint64_t>(rank);
  if (units >= n && units % n == 0) {
    const uint64_t per = units / n;
    b.lo[dim] = r * per * unit;
    b.hi[dim] = (r + 1) * per * unit;
  } else if (units > 0 && n % units == 0) {
    const uint64_t u = r / (n / units);  // fewer units than ranks: replicate units
    b.lo[dim] = u * unit;
    b.hi[dim] = (u + 1) * unit;
  } else {  // not a valid layout (validate() rejects it); split as evenly as possible
    const uint64_t len = t.shape[dim];
    b.lo[dim] = len * r / n;
    b.hi[dim] = len * (r + 1) / n;
  }
  return b;
}

namespace {

// FSDP2's Shard(0) of a rank's slice: chunk `idx` of `n`, ceil(len/n) rows
// each; the last chunks may be short or empty.
Box fsdpSlice(Box b, int idx, int n) {
  if (n <= 1 || b.rank() == 0) return b;
  const uint64_t len = b.hi[0] - b.lo[0];
  const uint64_t chunk = (len + static_cast<uint64_t>(n) - 1) / static_cast<uint64_t>(n);
  const uint64_t lo = std::min(b.hi[0], b.lo[0] + chunk * static_cast<uint64_t>(idx));
  b.hi[0] = std::min(b.hi[0], lo + chunk);
  b.lo[0] = lo;
  return b;
}

}  // namespace

std::vector<Shard> trainShards(const ModelInventory& inv, const TrainLayout& l, int trainRank) {
  const TrainCoord c = trainCoord(l, trainRank);
  const int lastStage = l.pp - 1;
  const int perEp = inv.experts > 0 ? std::max(1, inv.experts / l.ep) : 1;
  // Stage of every layer, once: this runs per rank over every tensor.
  std::vector<int> stageOf(static_cast<size_t>(std::max(inv.layers, 0)));
  for (int layer = 0; layer < inv.layers; ++layer)
    stageOf[layer] = stageOfLayer(l, inv.layers, layer);
  std::vector<Shard> out;
  for (size_t i = 0; i < inv.tensors.size(); ++i) {
    const TensorSpec& t = inv.tensors[i];
    int stage = t.kind == TensorKind::kEmbedding ? 0 : lastStage;
    if (t.layer >= 0) {
      stage = t.layer < inv.layers ? stageOf[t.layer] : stageOfLayer(l, inv.layers, t.layer);
    }
    if (stage != c.pp) continue;
    if (t.kind == TensorKind::kRoutedExpert) {
      if (t.expert / perEp != c.ep) continue;
      const int f = l.expertFsdp();
      Box b = fsdpSlice(tpSlice(t, c.etp, l.etp), c.edp % f, f);
      if (!b.empty()) out.push_back({static_cast<uint32_t>(i), std::move(b)});
    } else {
      Box b = fsdpSlice(tpSlice(t, c.tp, l.tp), c.dp % l.fsdp, l.fsdp);
      if (!b.empty()) out.push_back({static_cast<uint32_t>(i), std::move(b)});
    }
  }
  return out;
}

std::vector<Shard> inferShards(const ModelInventory& inv, const InferLayout& l, int inferRank) {
  const InferCoord c = inferCoord(l, inferRank);
  const int perEp = inv.experts > 0 ? std::max(1, inv.experts / l.ep) : 1;
  auto mine = [&](const TensorSpec& t) {
    return t.kind != TensorKind::kRoutedExpert || t.expert / perEp == c.ep;
  };
  // Counted first: growing the vector moved ~10^4 shards per rank, per rank.
  std::vector<Shard> out;
  out.reserve(static_cast<size_t>(std::count_if(inv.tensors.begin(), inv.tensors.end(), mine)));
  for (size_t i = 0; i < inv.tensors.size(); ++i) {
    const TensorSpec& t = inv.tensors[i];
    if (!mine(t)) continue;
    InferSplit sp = inferSplit(t, l);
    // The rank inside the split's group: groups are contiguous blocks of
    // ranks (an expert's MoE-TP group, a DP-attention group), or the engine.
    out.push_back({static_cast<uint32_t>(i), tpSlice(t, c.local % sp.size, sp.size)});
  }
  return out;
}

}  // namespace tide::workloads
