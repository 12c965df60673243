// Data-plane microbenchmarks: BufferPool acquire+release, manifest decode,
// ragged pack/unpack, and tide put+get into views vs a raw READ of the same
// bytes (pack and unpack included; Google Benchmark's first iterations are
// its warm-up).

#include <benchmark/benchmark.h>

#include <future>
#include <map>

#include "engine/core/kv_store.h"
#include "engine/data/transfer_paths.h"
#include "engine/transport/registry.h"
#include "workloads/rollout.h"

namespace tide::data {
namespace {

void BM_PoolAcquireRelease(benchmark::State& state) {
  PoolConfig c;
  c.classes = {{4096, 64}, {1 << 20, 8}};
  auto pool = orThrow(BufferPool::create(nullptr, c));
  for (auto _ : state) {
    Lease l = orThrow(pool->acquire(4096));
    benchmark::DoNotOptimize(l.data());
  }
}
BENCHMARK(BM_PoolAcquireRelease);

void BM_ManifestDecode(benchmark::State& state) {
  Manifest m;
  m.id = "rollout/q17";
  m.rows = 1024;
  m.regions.push_back(transport::RemoteRegion{0, 3, 1ull << 30, 0, 9, {}});
  for (int i = 0; i < 8; ++i) {
    FieldManifest f;
    f.name = "field" + std::to_string(i);
    f.kind = ColumnKind::kRagged;
    f.dtype = DType::kI32;
    f.valueCount = 1000;
    f.data = {0, uint64_t(i) * 16384, 4000, 0};
    f.offsets = {0, uint64_t(i) * 16384 + 8192, 1025 * 8, 0};
    m.fields.push_back(f);
  }
  std::string bytes = m.encode();
  for (auto _ : state) benchmark::DoNotOptimize(orThrow(Manifest::decode(bytes)).fields.size());
}
BENCHMARK(BM_ManifestDecode);

// Per-sample token rows with the workloads rollout length model (long-tailed).
const std::vector<std::vector<int32_t>>& rolloutRows() {
  static const auto rows = [] {
    workloads::RolloutConfig rc;
    rc.samplesPerStep = 1024;
    std::vector<std::vector<int32_t>> out;
    for (const auto& s : workloads::generateRollout(rc, 0))
      out.emplace_back(s.responseTokens, int32_t(s.responseTokens));
    return out;
  }();
  return rows;
}

// Pack: per-sample vectors (as an inference engine hands them over) into one
// ragged column (values + offsets).
void BM_RaggedPack(benchmark::State& state) {
  const auto& rows = rolloutRows();
  uint64_t bytes = 0;
  for (auto _ : state) {
    Column c = orThrow(Column::fromRows(rows));
    bytes = c.payloadBytes() + c.offsetsRef().size;
    benchmark::DoNotOptimize(c.data().data);
  }
  state.SetBytesProcessed(int64_t(bytes * state.iterations()));
}
BENCHMARK(BM_RaggedPack)->Unit(benchmark::kMicrosecond);

// Unpack: every row of a ragged column as a view through its offsets, every
// value read (no per-row decode or copy).
void BM_RaggedUnpack(benchmark::State& state) {
  Column c = orThrow(Column::fromRows(rolloutRows()));
  for (auto _ : state) {
    int64_t sum = 0;
    for (int64_t i = 0; i < c.rows(); ++i)
      for (int32_t v : c.row<int32_t>(i)) sum += v;
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(int64_t((c.payloadBytes() + c.offsetsRef().size) * state.iterations()));
}
BENCHMARK(BM_RaggedUnpack)->Unit(benchmark::kMicrosecond);

// Two ranks over a backend, with a rollout batch of ~64 MB built in pool memory.
struct Pair {
  MemoryStore kv;
  std::unique_ptr<transport::Transport> t[2];
  std::unique_ptr<BufferPool> pool[2];
  std::unique_ptr<BatchStore> store[2];
  RolloutShape shape;
  Batch batch;
};

Pair* pairFor(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<Pair>> pairs;
  auto& p = pairs[backend];
  if (p) return p.get();
  if (!transport::whyNotCompiled(backend).empty()) return nullptr;
  p = std::make_unique<Pair>();
  workloads::RolloutConfig rc;
  rc.samplesPerStep = 4096;
  for (const auto& s : workloads::generateRollout(rc, 0)) {
    p->shape.prompt.push_back(s.promptTokens);
    p->shape.response.push_back(s.responseTokens);
  }
  std::future<Result<std::unique_ptr<transport::Transport>>> f[2];
  for (int r = 0; r < 2; ++r)
    f[r] = std::async(std::launch::async, [&, r] {
      transport::TransportConfig c;
      c.backend = backend;
      c.rank = r;
      c.worldSize = 2;
      c.store = &p->kv;
      return transport::createTransport(c);
    });
  PoolConfig pc;
  pc.classes = {{1 << 20, 16}, {p->shape.raggedBytes() + 4096, 3}};
  for (int r = 0; r < 2; ++r) {
    p->t[r] = orThrow(f[r].get());
    p->pool[r] = orThrow(BufferPool::create(p->t[r].get(), pc));
    p->store[r] = std::make_unique<BatchStore>(*p->t[r], p->kv, *p->pool[r], 30);
  }
  p->batch = orThrow(buildRolloutBatch(p->shape, 1, p->pool[0].get()));
  return p.get();
}

void BM_TidePutGet(benchmark::State& state, const char* backend) {
  Pair* p = pairFor(backend);
  if (p == nullptr) return state.SkipWithError("backend not compiled");
  uint64_t i = 0, bytes = 0;
  for (auto _ : state) {
    std::string id = "bench/" + std::to_string(i++);
    orThrow(p->store[0]->put(id, p->batch));
    Batch got = orThrow(p->store[1]->get(id));
    orThrow(p->store[1]->done(id));
    orThrow(p->store[0]->reap().status());
    bytes = got.payloadBytes();
    for (const auto& [n, c] : got.columns()) bytes += c.offsetsRef().size;
  }
  state.SetBytesProcessed(int64_t(bytes * state.iterations()));
  state.counters["bytes"] = double(bytes);
}

void BM_RawRead(benchmark::State& state, const char* backend) {
  Pair* p = pairFor(backend);
  if (p == nullptr) return state.SkipWithError("backend not compiled");
  uint64_t bytes = p->shape.raggedBytes();
  const BufferRef& src = p->batch.columns()[0].second.data();
  Location loc = orThrow(p->pool[0]->locate(src.data, bytes));
  orThrow(p->t[1]->importRegion(*loc.descriptor));
  Lease dst = orThrow(p->pool[1]->acquire(bytes));
  for (auto _ : state) {
    std::vector<transport::Request> reqs;
    for (uint64_t d = 0; d < bytes; d += 8 << 20) {
      transport::Request r;
      r.op = transport::Op::kRead;
      r.localRegion = dst.regionId();
      r.localOffset = dst.regionOffset() + d;
      r.peer = 0;
      r.remoteRegion = loc.regionId;
      r.remoteOffset = loc.offset + d;
      r.length = std::min<uint64_t>(8 << 20, bytes - d);
      reqs.push_back(r);
    }
    orThrow(p->t[1]->wait(orThrow(p->t[1]->submit(reqs)), 30));
  }
  state.SetBytesProcessed(int64_t(bytes * state.iterations()));
}

BENCHMARK_CAPTURE(BM_RawRead, shm, "shm")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TidePutGet, shm, "shm")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawRead, tcp, "tcp")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TidePutGet, tcp, "tcp")->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tide::data

BENCHMARK_MAIN();
