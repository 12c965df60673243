// `tide bench transport`: point-to-point throughput of a transport backend
// against a reference measured in the same run (see transport_bench.h).

#include <cstdio>
#include <fstream>

#include "engine/core/units.h"
#include "harness/command.h"
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
  std::printf("%s\n", summarize(result).c_str());
  if (!a.json.empty()) {
    std::ofstream out(a.json, std::ios::trunc);
    out << result.dump(2) << "\n";
    if (!out) throw StatusError(TIDE_ERROR(Code::kInternal, "writing " + a.json + " failed"));
  }
}

}  // namespace

void addBenchCommand(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks of tide's data paths");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchArgs>();
  auto* t = bench->add_subcommand(
      "transport",
      "Rank 0 WRITEs --size bytes to rank 1 in --block requests; GB/s (1e9 B/s) vs a reference "
      "(tcp: iperf3 over loopback; shm: single-thread memcpy). Two threads by default, or two "
      "processes under `tide launch -n 2 --`");
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
}

}  // namespace tide::harness
