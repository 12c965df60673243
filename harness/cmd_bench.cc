// `tide bench transport`: point-to-point throughput of a transport backend
// against a reference measured in the same run (see transport_bench.h).
// `tide bench register`: a backend's registration cost by region size
// (register_bench.h).

#include <cstdio>
#include <fstream>

#include "engine/core/units.h"
#include "harness/command.h"
#include "harness/run_context.h"
#include "harness/transport_bench/register_bench.h"
#include "harness/transport_bench/transport_bench.h"

namespace tide::harness {
namespace {

struct BenchArgs {
  std::string backend = "tcp";
  std::string size = "1GiB";
  std::string block = "4MiB";
  std::string streams = "4";
  std::string repetitions = "5";
  std::vector<std::string> devices;
  std::string json;
  bool noReference = false;
};

Result<int> parseSmallCount(const std::string& flag, const std::string& text) {
  auto v = parseCount(text);
  if (!v.isOk()) return TIDE_ERROR(Code::kInvalidArgument, flag + ": " + v.status().message());
  if (*v > 1000000) return TIDE_ERROR(Code::kInvalidArgument, flag + " too large: " + text);
  return static_cast<int>(*v);
}

struct RegisterArgs {
  std::string backend = "tcp";
  std::vector<std::string> sizes = {"4MiB", "64MiB", "256MiB"};
  std::string repetitions = "5";
  std::vector<std::string> devices;
  std::string json;
};

Status writeResult(const std::string& path, const nlohmann::json& result) {
  if (path.empty()) return Status::ok();
  std::ofstream out(path, std::ios::trunc);
  out << result.dump(2) << "\n";
  if (!out) return TIDE_ERROR(Code::kInternal, "writing " + path + " failed");
  return Status::ok();
}

void runRegister(const RegisterArgs& a) {
  RegisterBenchOptions o;
  o.backend = a.backend;
  for (const auto& s : a.sizes) {
    auto v = parseSize(s);
    if (!v.isOk()) throw StatusError(v.status().withContext("--sizes"));
    o.sizes.push_back(*v);
  }
  o.repetitions = orThrow(parseSmallCount("--repetitions", a.repetitions));
  o.devices = a.devices;
  nlohmann::json result = orThrow(runRegisterBench(o));
  result["context"] = runContext();
  orThrow(writeResult(a.json, result));
}

void runTransport(const BenchArgs& a) {
  TransportBenchOptions o;
  o.backend = a.backend;
  auto withFlag = [](const char* flag, Result<uint64_t> r) {
    if (!r.isOk()) throw StatusError(r.status().withContext(flag));
    return *r;
  };
  o.bytes = withFlag("--size", parseSize(a.size));
  o.block = withFlag("--block", parseSize(a.block));
  o.streams = orThrow(parseSmallCount("--streams", a.streams));
  o.repetitions = orThrow(parseSmallCount("--repetitions", a.repetitions));
  o.devices = a.devices;
  o.reference = !a.noReference;
  orThrow(validate(o));
  if (!a.json.empty()) {  // fail before the run, not after it
    std::ofstream probe(a.json, std::ios::app);
    if (!probe)
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "cannot write --json " + a.json));
  }
  nlohmann::json result = orThrow(runTransportBench(o));
  if (result.is_null()) return;  // rank 1 of a launched pair: rank 0 reports
  result["context"] = runContext();
  std::printf("%s\n", summarize(result).c_str());
  orThrow(writeResult(a.json, result));
}

}  // namespace

void addBenchCommand(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks of tide's data paths");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchArgs>();
  auto* t = bench->add_subcommand(
      "transport",
      "Rank 0 WRITEs --size bytes to rank 1 in --block requests; GB/s (1e9 B/s) vs a reference "
      "(tcp: iperf3 -P <streams> over loopback; shm: memcpy by <streams> threads). Two threads by "
      "default, or two processes under `tide launch -n 2 --`");
  t->add_option("--backend", args->backend, "tcp | shm | rdma | nccl")->capture_default_str();
  t->add_option("--size", args->size, "bytes per repetition (B, KiB, MiB, GiB, KB, MB, GB)")
      ->capture_default_str();
  t->add_option("--block", args->block, "bytes per request")->capture_default_str();
  t->add_option("--streams", args->streams, "connections / copy threads per peer")
      ->capture_default_str();
  t->add_option("--repetitions", args->repetitions, "timed repetitions after one warm-up")
      ->capture_default_str();
  t->add_option("--device", args->devices, "rdma device(s), e.g. rxe0");
  t->add_option("--json", args->json, "write the result document here");
  t->add_flag("--no-reference", args->noReference, "skip the reference measurement");
  t->callback([args] { runTransport(*args); });

  auto reg = std::make_shared<RegisterArgs>();
  auto* r = bench->add_subcommand(
      "register",
      "Registration cost of a backend by region size: one rank registers a freshly allocated, "
      "touched buffer (as the executor's set-up does) and deregisters it; median seconds and "
      "seconds per page");
  r->add_option("--backend", reg->backend, "tcp | shm | rdma")->capture_default_str();
  r->add_option("--sizes", reg->sizes, "region sizes (B, KiB, MiB, GiB, KB, MB, GB)")
      ->delimiter(',')
      ->capture_default_str();
  r->add_option("--repetitions", reg->repetitions, "timed repetitions per size")
      ->capture_default_str();
  r->add_option("--device", reg->devices, "rdma device(s), e.g. rxe0");
  r->add_option("--json", reg->json, "write the result document here");
  r->callback([reg] { runRegister(*reg); });
}

}  // namespace tide::harness
