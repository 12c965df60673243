// Transport submit/poll microbenchmarks: small one-sided WRITE batches
// (64 B, 4 KiB, 64 KiB requests; 1 or 16 per batch) between two ranks that
// are threads of this process. Copies run on the backend's threads, so every
// benchmark times itself (manual time) around exactly the calls it names:
//   Submit      submit() alone (validation, queueing); the wait is untimed
//   SubmitWait  submit() + wait(): the batch's round trip
//   SubmitPoll  submit() + test() until done: the same, completion by polling
// Backends: tcp, shm (memcpy between threads), shm_map (copy=map: the region
// is a memfd the peer maps, the path ranks in different processes take) and
// shm_pvm (copy=process_vm: process_vm_writev, the fallback for other memory).

#include <benchmark/benchmark.h>

#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/kv_store.h"
#include "engine/transport/registry.h"

namespace tide::transport {
namespace {

constexpr int kMaxBatch = 16;
constexpr uint64_t kMaxRequest = 64 << 10;
constexpr uint64_t kRegionBytes = kMaxBatch * kMaxRequest;
constexpr double kWaitSeconds = 30;

struct Variant {
  const char* backend;
  const char* copy;  // shm option "copy", or nullptr
};

const std::map<std::string, Variant>& variants() {
  static const std::map<std::string, Variant> v = {{"tcp", {"tcp", nullptr}},
                                                   {"shm", {"shm", "auto"}},
                                                   {"shm_map", {"shm", "map"}},
                                                   {"shm_pvm", {"shm", "process_vm"}}};
  return v;
}

// Rank 0 writes from `src` into rank 1's `dst`; both from allocateHost().
// Declared so that the transports close before the memory goes.
struct Pair {
  MemoryStore kv;
  HostMemory src, dst;
  std::unique_ptr<Transport> t[2];
  LocalRegion local;
  RemoteRegion remote;
};

Result<Pair*> pairFor(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Pair>> pairs;
  auto& p = pairs[name];
  if (p) return p.get();
  const Variant& v = variants().at(name);
  std::string why = whyNotCompiled(v.backend);
  if (!why.empty()) return TIDE_ERROR(Code::kUnimplemented, why);
  auto made = std::make_unique<Pair>();
  std::future<Result<std::unique_ptr<Transport>>> f[2];
  for (int r = 0; r < 2; ++r)
    f[r] = std::async(std::launch::async, [&, r] {
      TransportConfig c;
      c.backend = v.backend;
      c.rank = r;
      c.worldSize = 2;
      c.store = &made->kv;
      if (v.copy != nullptr) c.options["copy"] = v.copy;
      return createTransport(c);
    });
  for (int r = 0; r < 2; ++r) {
    TIDE_ASSIGN_OR_RETURN(made->t[r], f[r].get());
  }
  TIDE_ASSIGN_OR_RETURN(made->src, made->t[0]->allocateHost(kRegionBytes));
  TIDE_ASSIGN_OR_RETURN(made->dst, made->t[1]->allocateHost(kRegionBytes));
  TIDE_ASSIGN_OR_RETURN(made->local, made->t[0]->registerRegion(made->src.data(), kRegionBytes));
  TIDE_ASSIGN_OR_RETURN(auto target, made->t[1]->registerRegion(made->dst.data(), kRegionBytes));
  made->remote = target.descriptor;
  TIDE_RETURN_IF_ERROR(made->t[0]->importRegion(made->remote));
  p = std::move(made);
  return p.get();
}

enum class Mode { kSubmit, kSubmitWait, kSubmitPoll };

// Args: request bytes, requests per batch.
void runBatches(benchmark::State& state, const std::string& name, Mode mode) {
  auto pair = pairFor(name);
  if (!pair.isOk()) return state.SkipWithError(("skipped: " + pair.status().message()).c_str());
  Pair& p = **pair;
  Transport& t = *p.t[0];
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  const int batch = static_cast<int>(state.range(1));
  std::vector<Request> reqs;
  for (int i = 0; i < batch; ++i)
    reqs.push_back(Request{Op::kWrite, p.local.id, i * kMaxRequest, 1, p.remote.id, i * kMaxRequest,
                           bytes, 0});
  for (auto _ : state) {
    Stopwatch sw;
    auto id = t.submit(reqs);
    if (!id.isOk()) return state.SkipWithError(id.status().toString().c_str());
    double submitted = sw.seconds();
    Status s;
    if (mode == Mode::kSubmitPoll) {
      while (true) {
        auto done = t.test(*id);
        if (!done.isOk()) return state.SkipWithError(done.status().toString().c_str());
        if (*done) break;
      }
    } else {
      s = t.wait(*id, kWaitSeconds);
    }
    double total = sw.seconds();
    if (!s.isOk()) return state.SkipWithError(s.toString().c_str());
    state.SetIterationTime(mode == Mode::kSubmit ? submitted : total);
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.SetBytesProcessed(state.iterations() * batch * static_cast<int64_t>(bytes));
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {int64_t{64}, int64_t{4} << 10, int64_t{64} << 10})
    for (int64_t batch : {int64_t{1}, int64_t{kMaxBatch}}) b->Args({bytes, batch});
  b->ArgNames({"bytes", "batch"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

void registerAll() {
  const std::pair<const char*, Mode> modes[] = {{"Submit", Mode::kSubmit},
                                                {"SubmitWait", Mode::kSubmitWait},
                                                {"SubmitPoll", Mode::kSubmitPoll}};
  for (const auto& [name, variant] : variants())
    for (const auto& [label, mode] : modes) {
      std::string n = name;
      Mode m = mode;
      sizes(benchmark::RegisterBenchmark(
          ("BM_" + std::string(label) + "/" + n).c_str(),
          [n, m](benchmark::State& state) { runBatches(state, n, m); }));
    }
}

}  // namespace
}  // namespace tide::transport

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  tide::transport::registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
