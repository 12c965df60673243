#include "harness/validation/matrix_file.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/sync/strategy_registry.h"
#include "workloads/cluster.h"
#include "workloads/toml_fields.h"

namespace tide::harness {

namespace {

using workloads::detail::TomlFields;

Status readStrings(TomlFields& f, std::string_view key, std::vector<std::string>& out) {
  const toml::node* n = f.get(key);
  if (!n) return Status::ok();
  const toml::array* arr = n->as_array();
  if (!arr || arr->empty()) return f.error(key, "must be a non-empty list of strings");
  out.clear();
  for (const auto& v : *arr) {
    auto s = v.value_exact<std::string>();
    if (!s || s->empty()) return f.error(key, "must be a non-empty list of strings");
    out.push_back(*s);
  }
  return Status::ok();
}

// The keys a [[config]] and [defaults] share; `row` takes what is given.
struct Keys {
  MatrixRow row;
  std::vector<std::string> strategies, backends{"tcp"}, quick;
};

Status readKeys(TomlFields& f, Keys& k) {
  MatrixRow& r = k.row;
  TIDE_RETURN_IF_ERROR(f.getString("varies", r.varies, false));
  TIDE_RETURN_IF_ERROR(f.getString("model", r.model, false));
  TIDE_RETURN_IF_ERROR(f.getInt("scale", r.scale, 1 << 16, false));
  TIDE_RETURN_IF_ERROR(f.getString("train", r.train, false));
  TIDE_RETURN_IF_ERROR(f.getString("infer", r.infer, false));
  TIDE_RETURN_IF_ERROR(f.getString("cluster", r.cluster, false));
  TIDE_RETURN_IF_ERROR(f.getString("bucket", r.bucket, false));
  TIDE_RETURN_IF_ERROR(f.getString("chunk", r.chunk, false));
  TIDE_RETURN_IF_ERROR(f.getString("infer_dtype", r.inferDtype, false));
  TIDE_RETURN_IF_ERROR(f.getInt("steps", r.steps, 100, false));
  TIDE_RETURN_IF_ERROR(f.getInt("streams", r.streams, 64, false));
  TIDE_RETURN_IF_ERROR(f.getInt("timeout", r.timeoutSeconds, 86400, false));
  TIDE_RETURN_IF_ERROR(readStrings(f, "strategies", k.strategies));
  TIDE_RETURN_IF_ERROR(readStrings(f, "backends", k.backends));
  return readStrings(f, "quick", k.quick);
}

Status checkRows(TomlFields& f, const Keys& k) {
  const MatrixRow& r = k.row;
  for (const auto& [key, v] : {std::pair<const char*, const std::string*>{"model", &r.model},
                               {"train", &r.train},
                               {"infer", &r.infer},
                               {"cluster", &r.cluster}}) {
    if (v->empty()) return f.error(key, "is required (here or in [defaults])");
  }
  if (k.strategies.empty()) return f.error("strategies", "is required (here or in [defaults])");
  if (r.scale < 1) return f.error("scale", "must be >= 1");
  if (r.steps < 1) return f.error("steps", "must be >= 1");
  if (r.timeoutSeconds < 1) return f.error("timeout", "must be >= 1 s");
  auto cluster = workloads::parseEmulated(r.cluster);
  if (!cluster.isOk()) {
    return f.error("cluster",
                   "a matrix runs on emulated clusters only: " + cluster.status().message());
  }
  for (const auto& s : k.strategies) {
    auto d = sync::findStrategy(s);
    if (!d.isOk()) return f.error("strategies", d.status().message());
    if (!(*d)->runsForReal() || !(*d)->simulated())
      return f.error("strategies", "'" + s + "' is not an update tide sync moves on the wire");
  }
  for (const auto& b : k.backends) {
    if (b != "tcp" && b != "rdma")
      return f.error("backends", "'" + b + "': a matrix runs tcp or rdma (the emulated links)");
  }
  for (const auto& q : k.quick) {
    if (std::find(k.strategies.begin(), k.strategies.end(), q) == k.strategies.end())
      return f.error("quick", "'" + q + "' is not one of the row's strategies");
  }
  return Status::ok();
}

}  // namespace

std::vector<std::string> MatrixRow::planArgs() const {
  std::vector<std::string> a{"--model",   model,   "--scale",    std::to_string(scale),
                             "--train",   train,   "--infer",    infer,
                             "--cluster", cluster, "--strategy", strategy};
  for (const auto& [flag, v] : {std::pair<const char*, const std::string*>{"--bucket", &bucket},
                                {"--chunk", &chunk},
                                {"--infer-dtype", &inferDtype}}) {
    if (!v->empty()) {
      a.emplace_back(flag);
      a.push_back(*v);
    }
  }
  return a;
}

Result<MatrixFile> loadMatrix(const std::string& path) {
  std::ifstream in(path);
  if (!in) return TIDE_ERROR(Code::kNotFound, "cannot open matrix " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  TIDE_ASSIGN_OR_RETURN(toml::table t, workloads::detail::parseToml(ss.str(), path));
  TomlFields top(t, path);
  Keys defaults;
  if (const toml::node* d = top.get("defaults")) {
    const toml::table* dt = d->as_table();
    if (!dt) return top.error("defaults", "must be a table");
    TomlFields f(*dt, path + " [defaults]");
    TIDE_RETURN_IF_ERROR(readKeys(f, defaults));
    TIDE_RETURN_IF_ERROR(f.rejectUnknown());
  }
  const toml::node* cn = top.get("config");
  const toml::array* configs = cn ? cn->as_array() : nullptr;
  if (!configs || configs->empty())
    return top.error("config", "the matrix needs at least one [[config]]");
  TIDE_RETURN_IF_ERROR(top.rejectUnknown());
  MatrixFile m{path, {}};
  std::set<std::string> names;
  int i = 0;
  for (const auto& node : *configs) {
    ++i;
    const toml::table* ct = node.as_table();
    if (!ct) return top.error("config", "entry " + std::to_string(i) + " is not a table");
    TomlFields f(*ct, path + " [[config]] " + std::to_string(i));
    Keys k = defaults;
    std::string name;
    TIDE_RETURN_IF_ERROR(f.getString("name", name, true));
    TIDE_RETURN_IF_ERROR(readKeys(f, k));
    TIDE_RETURN_IF_ERROR(f.rejectUnknown());
    if (name.find('/') != std::string::npos) return f.error("name", "must not contain '/'");
    if (!names.insert(name).second) return f.error("name", "'" + name + "' is used twice");
    TIDE_RETURN_IF_ERROR(checkRows(f, k));
    for (const auto& b : k.backends) {
      for (const auto& s : k.strategies) {
        MatrixRow r = k.row;
        r.config = name;
        r.strategy = s;
        r.backend = b;
        r.quick = std::find(k.quick.begin(), k.quick.end(), s) != k.quick.end();
        m.rows.push_back(std::move(r));
      }
    }
  }
  return m;
}

}  // namespace tide::harness
