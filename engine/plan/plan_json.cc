// TransferPlan <-> JSON ("tide.plan/2"). Moves are written as arrays in the
// order of "move_fields" to keep large plans compact.

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/plan/transfer_plan.h"

namespace tide::plan {

using nlohmann::json;

namespace {

const std::vector<std::string> kMoveFields = {
    "src",       "dst",       "tensor", "lo",   "hi",    "src_space", "dst_space",
    "src_dtype", "dst_dtype", "kind",   "path", "stage", "bucket",    "bytes"};

template <typename E>
Result<E> enumFrom(const json& j, const char* (*name)(E), int count, const char* what) {
  const std::string s = j.get<std::string>();
  for (int i = 0; i < count; ++i) {
    if (s == name(static_cast<E>(i))) return static_cast<E>(i);
  }
  return TIDE_ERROR(Code::kInvalidArgument,
                    std::string("plan json: unknown ") + what + " '" + s + "'");
}

Result<workloads::DType> dtypeFrom(const json& j) {
  return workloads::parseDType(j.get<std::string>());
}

json boxLo(const RegionBox& b) {
  return std::vector<uint64_t>(b.lo.begin(), b.lo.begin() + b.ndim);
}
json boxHi(const RegionBox& b) {
  return std::vector<uint64_t>(b.hi.begin(), b.hi.begin() + b.ndim);
}

Result<RegionBox> boxFrom(const json& lo, const json& hi) {
  workloads::Box b;
  b.lo = lo.get<std::vector<uint64_t>>();
  b.hi = hi.get<std::vector<uint64_t>>();
  if (b.lo.size() != b.hi.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "plan json: box lo/hi ranks differ");
  }
  return RegionBox::from(b);
}

// The body of fromJson; nlohmann throws on type errors, caught by the caller.
Result<TransferPlan> parse(const json& j) {
  const std::string schema = j.is_object() && j.contains("schema") && j["schema"].is_string()
                                 ? j["schema"].get<std::string>()
                                 : "";
  if (schema != kPlanSchema) {
    const bool older = schema.rfind("tide.plan/", 0) == 0;
    return TIDE_ERROR(Code::kInvalidArgument,
                      "plan json: schema is " +
                          (schema.empty() ? std::string("missing") : "'" + schema + "'") +
                          ", this tide reads " + kPlanSchema +
                          (older ? " (a plan of another version: make it again with tide plan "
                                   "--json)"
                                 : ""));
  }
  TransferPlan p;
  p.strategy = j.at("strategy").get<std::string>();
  if (j.contains("params")) {
    TIDE_ASSIGN_OR_RETURN(p.params, PlanParams::fromJson(j["params"]));
  }
  for (const auto& r : j.at("ranks")) {
    RankInfo ri;
    ri.id = r.at("id").get<uint32_t>();
    TIDE_ASSIGN_OR_RETURN(ri.role, enumFrom<Role>(r.at("role"), roleName, 3, "role"));
    ri.node = r.at("node").get<uint32_t>();
    ri.gpu = r.at("gpu").get<uint32_t>();
    p.ranks.push_back(ri);
  }
  for (const auto& t : j.at("tensors")) {
    TensorInfo ti;
    ti.id = t.at("id").get<uint32_t>();
    ti.name = t.at("name").get<std::string>();
    ti.shape = t.at("shape").get<std::vector<uint64_t>>();
    TIDE_ASSIGN_OR_RETURN(ti.trainDtype, dtypeFrom(t.at("train_dtype")));
    TIDE_ASSIGN_OR_RETURN(ti.inferDtype, dtypeFrom(t.at("infer_dtype")));
    ti.fp8Block = t.value("fp8_block", 0u);
    p.tensors.push_back(std::move(ti));
  }
  for (const auto& h : j.at("holdings")) {
    Holding hd;
    hd.rank = h.at(0).get<uint32_t>();
    TIDE_ASSIGN_OR_RETURN(hd.space, enumFrom<Space>(h.at(1), spaceName, 4, "space"));
    hd.tensor = h.at(2).get<uint32_t>();
    TIDE_ASSIGN_OR_RETURN(hd.box, boxFrom(h.at(3), h.at(4)));
    TIDE_ASSIGN_OR_RETURN(hd.dtype, dtypeFrom(h.at(5)));
    p.holdings.push_back(hd);
  }
  for (const auto& b : j.at("buckets")) {
    Bucket bk;
    bk.id = b.at("id").get<uint32_t>();
    bk.owner = b.at("owner").get<uint32_t>();
    bk.stage = b.at("stage").get<uint32_t>();
    bk.bytes = b.at("bytes").get<uint64_t>();
    for (const auto& e : b.at("entries")) {
      BucketEntry be;
      be.tensor = e.at(0).get<uint32_t>();
      TIDE_ASSIGN_OR_RETURN(be.box, boxFrom(e.at(1), e.at(2)));
      TIDE_ASSIGN_OR_RETURN(be.dtype, dtypeFrom(e.at(3)));
      bk.entries.push_back(be);
    }
    p.buckets.push_back(std::move(bk));
  }
  for (const auto& s : j.at("stages")) {
    Stage st;
    st.id = s.at("id").get<uint32_t>();
    st.name = s.at("name").get<std::string>();
    for (const auto& d : s.at("deps")) {
      st.deps.push_back(Dependency{d.at("stage").get<uint32_t>(), d.at("per_bucket").get<bool>()});
    }
    p.stages.push_back(std::move(st));
  }
  if (j.at("move_fields").get<std::vector<std::string>>() != kMoveFields) {
    return TIDE_ERROR(Code::kInvalidArgument, "plan json: unexpected move_fields");
  }
  const auto& mv = j.at("moves");
  p.moves.reserve(mv.size());
  for (const auto& m : mv) {
    Move x;
    x.src = m.at(0).get<uint32_t>();
    x.dst = m.at(1).get<uint32_t>();
    x.tensor = m.at(2).get<uint32_t>();
    TIDE_ASSIGN_OR_RETURN(x.box, boxFrom(m.at(3), m.at(4)));
    TIDE_ASSIGN_OR_RETURN(x.srcSpace, enumFrom<Space>(m.at(5), spaceName, 4, "space"));
    TIDE_ASSIGN_OR_RETURN(x.dstSpace, enumFrom<Space>(m.at(6), spaceName, 4, "space"));
    TIDE_ASSIGN_OR_RETURN(x.srcDtype, dtypeFrom(m.at(7)));
    TIDE_ASSIGN_OR_RETURN(x.dstDtype, dtypeFrom(m.at(8)));
    TIDE_ASSIGN_OR_RETURN(x.kind, enumFrom<MoveKind>(m.at(9), moveKindName, 4, "move kind"));
    TIDE_ASSIGN_OR_RETURN(x.path, enumFrom<Path>(m.at(10), pathName, 3, "path"));
    x.stage = m.at(11).get<uint32_t>();
    x.bucket = m.at(12).get<uint32_t>();
    x.bytes = m.at(13).get<uint64_t>();
    p.moves.push_back(x);
  }
  if (j.contains("work")) {
    TIDE_ASSIGN_OR_RETURN(p.work, StepGraph::fromJson(j.at("work")));
  }
  return p;
}

}  // namespace

json PlanSummary::toJson() const {
  json j;
  j["moves"] = moves;
  j["total_bytes"] = totalBytes;
  json kinds = json::object(), paths = json::object(), mk = json::object();
  for (int k = 0; k < 4; ++k) {
    kinds[moveKindName(static_cast<MoveKind>(k))] = bytesByKind[k];
    mk[moveKindName(static_cast<MoveKind>(k))] = movesByKind[k];
  }
  for (int p = 0; p < 3; ++p) paths[pathName(static_cast<Path>(p))] = bytesByPath[p];
  j["bytes_by_kind"] = kinds;
  j["moves_by_kind"] = mk;
  j["bytes_by_path"] = paths;
  uint64_t maxSent = 0, maxRecv = 0;
  for (auto b : sentBytes) maxSent = std::max(maxSent, b);
  for (auto b : receivedBytes) maxRecv = std::max(maxRecv, b);
  j["max_rank_sent_bytes"] = maxSent;
  j["max_rank_received_bytes"] = maxRecv;
  j["sent_bytes_per_rank"] = sentBytes;
  j["received_bytes_per_rank"] = receivedBytes;
  return j;
}

json TransferPlan::toJson() const {
  json j;
  j["schema"] = kPlanSchema;
  j["schema_version"] = kPlanSchemaVersion;
  j["strategy"] = strategy;
  j["params"] = params.toJson();
  j["ranks"] = json::array();
  for (const auto& r : ranks) {
    j["ranks"].push_back(
        {{"id", r.id}, {"role", roleName(r.role)}, {"node", r.node}, {"gpu", r.gpu}});
  }
  j["tensors"] = json::array();
  for (const auto& t : tensors) {
    j["tensors"].push_back({{"id", t.id},
                            {"name", t.name},
                            {"shape", t.shape},
                            {"train_dtype", workloads::dtypeName(t.trainDtype)},
                            {"infer_dtype", workloads::dtypeName(t.inferDtype)},
                            {"fp8_block", t.fp8Block}});
  }
  j["holding_fields"] = {"rank", "space", "tensor", "lo", "hi", "dtype"};
  j["holdings"] = json::array();
  for (const auto& h : holdings) {
    j["holdings"].push_back(json::array({h.rank, spaceName(h.space), h.tensor, boxLo(h.box),
                                         boxHi(h.box), workloads::dtypeName(h.dtype)}));
  }
  j["buckets"] = json::array();
  for (const auto& b : buckets) {
    json e = json::array();
    for (const auto& x : b.entries) {
      e.push_back(
          json::array({x.tensor, boxLo(x.box), boxHi(x.box), workloads::dtypeName(x.dtype)}));
    }
    j["buckets"].push_back(
        {{"id", b.id}, {"owner", b.owner}, {"stage", b.stage}, {"bytes", b.bytes}, {"entries", e}});
  }
  j["stages"] = json::array();
  for (const auto& s : stages) {
    json deps = json::array();
    for (const auto& d : s.deps) deps.push_back({{"stage", d.stage}, {"per_bucket", d.perBucket}});
    j["stages"].push_back({{"id", s.id}, {"name", s.name}, {"deps", deps}});
  }
  j["move_fields"] = kMoveFields;
  json mv = json::array();
  for (const auto& m : moves) {
    mv.push_back(json::array({m.src, m.dst, m.tensor, boxLo(m.box), boxHi(m.box),
                              spaceName(m.srcSpace), spaceName(m.dstSpace),
                              workloads::dtypeName(m.srcDtype), workloads::dtypeName(m.dstDtype),
                              moveKindName(m.kind), pathName(m.path), m.stage, m.bucket, m.bytes}));
  }
  j["moves"] = std::move(mv);
  if (!work.empty()) j["work"] = work.toJson();
  return j;
}

Result<TransferPlan> TransferPlan::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return TIDE_ERROR(Code::kNotFound, "cannot open plan " + path);
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) return TIDE_ERROR(Code::kInvalidArgument, path + ": bad JSON");
  auto p = fromJson(j);
  if (!p.isOk()) return p.status().withContext(path);
  return p;
}

Result<TransferPlan> TransferPlan::fromJson(const json& j) {
  try {
    TIDE_ASSIGN_OR_RETURN(TransferPlan p, parse(j));
    TIDE_RETURN_IF_ERROR(p.validate());
    return p;
  } catch (const json::exception& e) {
    return TIDE_ERROR(Code::kInvalidArgument, std::string("plan json: ") + e.what());
  }
}

}  // namespace tide::plan
