#include "engine/plan/plan_params.h"

#include <nlohmann/json.hpp>
#include <set>

namespace tide::plan {

using nlohmann::json;

const char* assignmentName(Assignment a) {
  return a == Assignment::kRoundRobin ? "round_robin" : "balanced";
}

const char* stagingName(Staging s) {
  return s == Staging::kDevice ? "device" : "host";
}

json PlanParams::toJson() const {
  const PlanOptions& o = options;
  const PlanWorkload& w = workload;
  return {{"bucket_bytes", o.bucketBytes},
          {"chunk_bytes", o.chunkBytes},
          {"channels", o.channels},
          {"assignment", assignmentName(o.assignment)},
          {"staging", stagingName(o.staging)},
          {"fp8_wire", o.fp8Wire},
          {"first_update", o.firstUpdate},
          {"page_bytes", o.pageBytes},
          {"pipelined", o.pipelined},
          {"max_step_buckets", o.maxStepBuckets},
          {"workload",
           {{"model", w.model},
            {"scale", w.scale},
            {"infer_dtype", w.inferDtype},
            {"fp8_block", w.fp8Block},
            {"train", w.train},
            {"infer", w.infer},
            {"cluster", w.cluster},
            {"gpus_per_node", w.gpusPerNode},
            {"colocated", w.colocated},
            {"infer_first_gpu", w.inferFirstGpu}}}};
}

namespace {

// Reads the keys of one object into typed fields, refusing any it does not know.
class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {}

  template <class T>
  void get(const char* key, T& out) {
    known_.insert(key);
    if (j_.contains(key)) out = j_.at(key).get<T>();
  }
  template <class E>
  Status getEnum(const char* key, E& out, const char* (*name)(E), std::initializer_list<E> all) {
    known_.insert(key);
    if (!j_.contains(key)) return Status::ok();
    const std::string s = j_.at(key).get<std::string>();
    for (E e : all) {
      if (s == name(e)) {
        out = e;
        return Status::ok();
      }
    }
    return TIDE_ERROR(Code::kInvalidArgument,
                      "plan json: " + where_ + "." + key + " '" + s + "' is unknown");
  }
  Status finish() const {
    for (const auto& [k, v] : j_.items()) {
      (void)v;
      if (!known_.count(k))
        return TIDE_ERROR(Code::kInvalidArgument, "plan json: unknown key " + where_ + "." + k);
    }
    return Status::ok();
  }

 private:
  const json& j_;
  std::string where_;
  std::set<std::string> known_;
};

Result<PlanParams> parseParams(const json& j) {
  if (!j.is_object()) return TIDE_ERROR(Code::kInvalidArgument, "plan json: params not an object");
  PlanParams p;
  PlanOptions& o = p.options;
  Reader r(j, "params");
  r.get("bucket_bytes", o.bucketBytes);
  r.get("chunk_bytes", o.chunkBytes);
  r.get("channels", o.channels);
  TIDE_RETURN_IF_ERROR(r.getEnum("assignment", o.assignment, assignmentName,
                                 {Assignment::kBalanced, Assignment::kRoundRobin}));
  TIDE_RETURN_IF_ERROR(
      r.getEnum("staging", o.staging, stagingName, {Staging::kHost, Staging::kDevice}));
  r.get("fp8_wire", o.fp8Wire);
  r.get("first_update", o.firstUpdate);
  r.get("page_bytes", o.pageBytes);
  r.get("pipelined", o.pipelined);
  r.get("max_step_buckets", o.maxStepBuckets);
  json w = json::object();
  r.get("workload", w);
  TIDE_RETURN_IF_ERROR(r.finish());
  if (!w.is_object())
    return TIDE_ERROR(Code::kInvalidArgument, "plan json: params.workload not an object");
  PlanWorkload& pw = p.workload;
  Reader rw(w, "params.workload");
  rw.get("model", pw.model);
  rw.get("scale", pw.scale);
  rw.get("infer_dtype", pw.inferDtype);
  rw.get("fp8_block", pw.fp8Block);
  rw.get("train", pw.train);
  rw.get("infer", pw.infer);
  rw.get("cluster", pw.cluster);
  rw.get("gpus_per_node", pw.gpusPerNode);
  rw.get("colocated", pw.colocated);
  rw.get("infer_first_gpu", pw.inferFirstGpu);
  TIDE_RETURN_IF_ERROR(rw.finish());
  if (o.chunkBytes == 0 || o.bucketBytes == 0 || o.pageBytes == 0)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "plan json: params bucket_bytes, chunk_bytes and page_bytes must be > 0");
  if (o.channels < 0 || o.maxStepBuckets <= 0 || pw.scale < 1)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "plan json: params channels >= 0, max_step_buckets > 0 and scale >= 1");
  return p;
}

}  // namespace

Result<PlanParams> PlanParams::fromJson(const json& j) {
  try {
    return parseParams(j);
  } catch (const json::exception& e) {
    return TIDE_ERROR(Code::kInvalidArgument, std::string("plan json: params: ") + e.what());
  }
}

}  // namespace tide::plan
