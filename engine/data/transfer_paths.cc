#include "engine/data/transfer_paths.h"

#include <algorithm>
#include <cstring>

#include "engine/core/clock.h"

namespace tide::data {
namespace {

int32_t promptToken(uint64_t seed, int64_t row, int64_t j) {
  return int32_t((seed * 2654435761u + uint64_t(row) * 40503u + uint64_t(j)) & 0x7ffff);
}
int32_t responseToken(uint64_t seed, int64_t row, int64_t j) {
  return int32_t((seed * 97u + uint64_t(row) * 65599u + uint64_t(j) * 3u) & 0x7ffff);
}
float logProb(int64_t row, int64_t j) {
  return -float((row + j) % 1000) / 128.f;
}

// A layout of named byte ranges inside one buffer.
struct Layout {
  std::vector<uint64_t> at;
  uint64_t total = 0;
  size_t add(uint64_t bytes) {
    at.push_back(total);
    total = alignPayload(total + bytes);
    return at.size() - 1;
  }
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
  return v[i];
}

Status readRaw(transport::Transport& t, const transport::RemoteRegion& src, uint64_t srcOffset,
               const Lease& dst, uint64_t bytes, double timeout) {
  std::vector<transport::Request> reqs;
  constexpr uint64_t kChunk = 8ull << 20;  // as BatchStore chunks its reads
  for (uint64_t d = 0; d < bytes; d += kChunk) {
    transport::Request r;
    r.op = transport::Op::kRead;
    r.localRegion = dst.regionId();
    r.localOffset = dst.regionOffset() + d;
    r.peer = src.rank;
    r.remoteRegion = src.id;
    r.remoteOffset = srcOffset + d;
    r.length = std::min(kChunk, bytes - d);
    reqs.push_back(r);
  }
  TIDE_ASSIGN_OR_RETURN(transport::BatchId b, t.submit(reqs));
  return t.wait(b, timeout);
}

struct Sample {
  std::vector<int32_t> prompt, response;
  std::vector<float> logProbs;
  float reward = 0;
};

// Bytes of a batch that cross the transport: its payload and the offsets of
// its ragged columns.
uint64_t crossedBytes(const Batch& b) {
  uint64_t n = b.payloadBytes();
  for (const auto& [name, c] : b.columns()) n += c.offsetsRef().size;
  return n;
}

}  // namespace

uint64_t RolloutShape::raggedBytes() const {
  uint64_t p = 0, r = 0, n = prompt.size();
  for (auto x : prompt) p += x;
  for (auto x : response) r += x;
  return p * 4 + r * 8 + n * 4 + 3 * (n + 1) * 8;
}

uint64_t RolloutShape::paddedBytes() const {
  uint64_t n = prompt.size();
  uint64_t mp = prompt.empty() ? 0 : *std::max_element(prompt.begin(), prompt.end());
  uint64_t mr = response.empty() ? 0 : *std::max_element(response.begin(), response.end());
  return n * mp * 4 + n * mr * 8 + n * 4 * 3;
}

double PathTimes::median() const {
  return percentile(seconds, 0.5);
}
double PathTimes::p95() const {
  return percentile(seconds, 0.95);
}

Result<Batch> buildRolloutBatch(const RolloutShape& shape, uint64_t seed, BufferPool* pool) {
  int64_t n = int64_t(shape.prompt.size());
  if (shape.response.size() != shape.prompt.size())
    return TIDE_ERROR(Code::kInvalidArgument, "prompt and response counts differ");
  uint64_t pTok = 0, rTok = 0;
  for (auto x : shape.prompt) pTok += x;
  for (auto x : shape.response) rTok += x;
  Layout l;
  size_t pv = l.add(pTok * 4), po = l.add((n + 1) * 8), rv = l.add(rTok * 4),
         ro = l.add((n + 1) * 8), lv = l.add(rTok * 4), rw = l.add(n * 4);
  BufferRef whole;
  if (pool != nullptr) {
    TIDE_ASSIGN_OR_RETURN(Lease lease, pool->acquire(std::max<uint64_t>(l.total, 64)));
    auto sp = std::make_shared<Lease>(std::move(lease));
    whole = BufferRef{sp, sp->data(), sp->size()};
  } else {
    auto v = std::make_shared<std::vector<uint64_t>>(l.total / 8 + 8);
    whole = BufferRef{v, reinterpret_cast<const uint8_t*>(v->data()), l.total};
  }
  auto* base = const_cast<uint8_t*>(whole.data);
  auto* pVals = reinterpret_cast<int32_t*>(base + l.at[pv]);
  auto* pOffs = reinterpret_cast<int64_t*>(base + l.at[po]);
  auto* rVals = reinterpret_cast<int32_t*>(base + l.at[rv]);
  auto* rOffs = reinterpret_cast<int64_t*>(base + l.at[ro]);
  auto* lVals = reinterpret_cast<float*>(base + l.at[lv]);
  auto* rew = reinterpret_cast<float*>(base + l.at[rw]);
  pOffs[0] = rOffs[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    pOffs[i + 1] = pOffs[i] + shape.prompt[i];
    rOffs[i + 1] = rOffs[i] + shape.response[i];
    for (int64_t j = 0; j < int64_t(shape.prompt[i]); ++j)
      pVals[pOffs[i] + j] = promptToken(seed, i, j);
    for (int64_t j = 0; j < int64_t(shape.response[i]); ++j) {
      rVals[rOffs[i] + j] = responseToken(seed, i, j);
      lVals[rOffs[i] + j] = logProb(i, j);
    }
    rew[i] = float(i % 3) - 1.f;
  }
  Batch b;
  TIDE_ASSIGN_OR_RETURN(Column prompt,
                        Column::ragged(DType::kI32, {}, whole.sub(l.at[pv], pTok * 4),
                                       whole.sub(l.at[po], (n + 1) * 8)));
  TIDE_ASSIGN_OR_RETURN(Column resp, Column::ragged(DType::kI32, {}, whole.sub(l.at[rv], rTok * 4),
                                                    whole.sub(l.at[ro], (n + 1) * 8)));
  // log_probs shares the response offsets: same rows, same lengths.
  TIDE_ASSIGN_OR_RETURN(Column lp, Column::ragged(DType::kF32, {}, whole.sub(l.at[lv], rTok * 4),
                                                  whole.sub(l.at[ro], (n + 1) * 8)));
  TIDE_ASSIGN_OR_RETURN(Column reward, Column::dense(DType::kF32, {n}, whole.sub(l.at[rw], n * 4)));
  TIDE_RETURN_IF_ERROR(b.add("prompt", std::move(prompt)));
  TIDE_RETURN_IF_ERROR(b.add("response", std::move(resp)));
  TIDE_RETURN_IF_ERROR(b.add("log_probs", std::move(lp)));
  TIDE_RETURN_IF_ERROR(b.add("reward", std::move(reward)));
  b.meta()["seed"] = seed;
  return b;
}

Result<Batch> padRolloutBatch(const Batch& ragged) {
  int64_t n = ragged.rows();
  Batch out;
  for (const char* name : {"prompt", "response", "log_probs"}) {
    TIDE_ASSIGN_OR_RETURN(const Column* c, ragged.column(name));
    int64_t maxLen = 0;
    for (int64_t i = 0; i < n; ++i) maxLen = std::max(maxLen, c->rowLength(i));
    std::vector<uint8_t> dense(uint64_t(n) * maxLen * 4, 0);
    for (int64_t i = 0; i < n; ++i) {
      auto r = c->rowBytes(i);
      if (!r.empty()) std::memcpy(dense.data() + uint64_t(i) * maxLen * 4, r.data(), r.size());
    }
    TIDE_ASSIGN_OR_RETURN(Column d,
                          Column::dense(c->dtype(), {n, maxLen}, BufferRef::own(std::move(dense))));
    TIDE_RETURN_IF_ERROR(out.add(name, std::move(d)));
  }
  for (const char* name : {"prompt", "response"}) {
    const Column* c = ragged.find(name);
    std::vector<int32_t> len(n);
    for (int64_t i = 0; i < n; ++i) len[i] = int32_t(c->rowLength(i));
    TIDE_ASSIGN_OR_RETURN(Column d, Column::fromDense(std::move(len), {n}));
    TIDE_RETURN_IF_ERROR(out.add(std::string(name) + "_len", std::move(d)));
  }
  TIDE_ASSIGN_OR_RETURN(const Column* reward, ragged.column("reward"));
  TIDE_RETURN_IF_ERROR(out.add("reward", *reward));
  out.meta() = ragged.meta();
  return out;
}

Status checkRolloutRow(const Batch& b, int64_t row, int64_t src, uint64_t seed) {
  TIDE_ASSIGN_OR_RETURN(const Column* p, b.column("prompt"));
  TIDE_ASSIGN_OR_RETURN(const Column* r, b.column("response"));
  TIDE_ASSIGN_OR_RETURN(const Column* l, b.column("log_probs"));
  auto pr = p->row<int32_t>(row);
  auto rr = r->row<int32_t>(row);
  auto lr = l->row<float>(row);
  for (size_t j = 0; j < pr.size(); ++j)
    if (pr[j] != promptToken(seed, src, int64_t(j)))
      return TIDE_ERROR(Code::kDataLoss, "prompt row " + std::to_string(src) + " differs");
  for (size_t j = 0; j < rr.size(); ++j)
    if (rr[j] != responseToken(seed, src, int64_t(j)) || lr[j] != logProb(src, int64_t(j)))
      return TIDE_ERROR(Code::kDataLoss, "response row " + std::to_string(src) + " differs");
  return Status::ok();
}

Result<std::vector<PathTimes>> measurePaths(BatchStore& producer, BatchStore& consumer,
                                            const RolloutShape& shape, const PathsConfig& cfg) {
  constexpr uint64_t kSeed = 7;
  double timeout = consumer.timeoutSeconds();
  transport::Transport& ct = *consumer.pool().transport();
  int64_t n = int64_t(shape.prompt.size());
  std::vector<PathTimes> out;
  int iters = cfg.warmup + cfg.reps;
  int64_t probe = n / 2;

  // tide, batch built in registered memory: pack = checksums (per the
  // producer's policy) + manifest.
  TIDE_ASSIGN_OR_RETURN(Batch inPlace, buildRolloutBatch(shape, kSeed, &producer.pool()));
  auto tideOnce = [&](PathTimes& t, const Batch& batch, int i) -> Status {
    std::string id = "paths/" + t.path + "/" + std::to_string(i);
    Stopwatch sw;
    TIDE_RETURN_IF_ERROR(producer.put(id, batch));
    TIDE_ASSIGN_OR_RETURN(Batch got, consumer.get(id));
    TIDE_RETURN_IF_ERROR(consumer.done(id));
    TIDE_RETURN_IF_ERROR(producer.reap().status());
    double s = sw.seconds();
    if (i >= cfg.warmup) t.seconds.push_back(s);
    t.bytes = crossedBytes(got);
    return checkRolloutRow(got, probe, probe, kSeed);
  };
  auto tidePath = [&](const std::string& name, const Batch& batch) -> Status {
    PathTimes t{name};
    for (int i = 0; i < iters; ++i) TIDE_RETURN_IF_ERROR(tideOnce(t, batch, i));
    out.push_back(std::move(t));
    return Status::ok();
  };

  // raw: the same number of bytes, registered to registered. Its repetitions
  // alternate with tide's, so both see the same load on a shared host and
  // the ratio between them holds when absolute times drift.
  {
    PathTimes tide{"tide"}, raw{"raw"};
    uint64_t bytes = crossedBytes(inPlace);
    raw.bytes = bytes;
    const BufferRef& src = inPlace.columns()[0].second.data();
    TIDE_ASSIGN_OR_RETURN(Location loc, producer.pool().locate(src.data, bytes));
    TIDE_RETURN_IF_ERROR(ct.importRegion(*loc.descriptor));
    TIDE_ASSIGN_OR_RETURN(Lease dst, consumer.pool().acquire(bytes));
    for (int i = 0; i < iters; ++i) {
      TIDE_RETURN_IF_ERROR(tideOnce(tide, inPlace, i));
      Stopwatch sw;
      TIDE_RETURN_IF_ERROR(readRaw(ct, *loc.descriptor, loc.offset, dst, bytes, timeout));
      if (i >= cfg.warmup) raw.seconds.push_back(sw.seconds());
    }
    if (tide.bytes != bytes) {
      return TIDE_ERROR(Code::kInternal, "tide moved " + std::to_string(tide.bytes) +
                                             " bytes, the raw reference " + std::to_string(bytes));
    }
    out.push_back(std::move(raw));
    out.push_back(std::move(tide));
  }
  if (!producer.checksumsOnPut()) {
    // What integrity costs where the policy skipped it: hashed and verified.
    producer.setChecksums(ChecksumPolicy::kOn);
    Status s = tidePath("tide_checksummed", inPlace);
    producer.setChecksums(ChecksumPolicy::kOff);
    TIDE_RETURN_IF_ERROR(s);
  }

  // tide from ordinary heap memory: put packs each field into a lease.
  {
    TIDE_ASSIGN_OR_RETURN(Batch heap, buildRolloutBatch(shape, kSeed, nullptr));
    TIDE_RETURN_IF_ERROR(tidePath("tide_packed", heap));
  }

  // padded (DataProto layout): padding is part of the timed pack.
  {
    PathTimes t{"padded"};
    t.bytes = shape.paddedBytes();
    if (t.bytes > cfg.paddedLimitBytes || t.bytes > consumer.pool().largestBuffer()) {
      t.skipped = "padded layout needs " + std::to_string(t.bytes) + " bytes, over the " +
                  std::to_string(std::min(cfg.paddedLimitBytes, consumer.pool().largestBuffer())) +
                  "-byte limit";
      out.push_back(std::move(t));
    } else {
      for (int i = 0; i < iters; ++i) {
        std::string id = "paths/padded/" + std::to_string(i);
        Stopwatch sw;
        TIDE_ASSIGN_OR_RETURN(Batch padded, padRolloutBatch(inPlace));
        TIDE_RETURN_IF_ERROR(producer.put(id, padded));
        TIDE_ASSIGN_OR_RETURN(Batch got, consumer.get(id));
        TIDE_RETURN_IF_ERROR(consumer.done(id));
        TIDE_RETURN_IF_ERROR(producer.reap().status());
        if (i >= cfg.warmup) t.seconds.push_back(sw.seconds());
      }
      out.push_back(std::move(t));
    }
  }

  // copy: serialize, copy in, READ, copy out, deserialize row by row.
  if (cfg.copyPath) {
    PathTimes t{"copy"};
    const Column& p = *inPlace.find("prompt");
    const Column& r = *inPlace.find("response");
    const Column& l = *inPlace.find("log_probs");
    const Column& w = *inPlace.find("reward");
    for (int i = 0; i < iters; ++i) {
      Stopwatch sw;
      std::vector<uint8_t> ser;
      auto append = [&](const void* d, size_t len) {
        const auto* b = static_cast<const uint8_t*>(d);
        ser.insert(ser.end(), b, b + len);
      };
      for (int64_t row = 0; row < n; ++row) {
        uint32_t pl = uint32_t(p.rowLength(row)), rl = uint32_t(r.rowLength(row));
        append(&pl, 4);
        append(p.rowBytes(row).data(), pl * 4);
        append(&rl, 4);
        append(r.rowBytes(row).data(), rl * 4);
        append(l.rowBytes(row).data(), rl * 4);
        append(w.rowBytes(row).data(), 4);
      }
      TIDE_ASSIGN_OR_RETURN(Lease src, producer.pool().acquire(ser.size()));
      std::memcpy(src.data(), ser.data(), ser.size());
      TIDE_ASSIGN_OR_RETURN(Location loc, producer.pool().locate(src.data(), ser.size()));
      TIDE_RETURN_IF_ERROR(ct.importRegion(*loc.descriptor));
      TIDE_ASSIGN_OR_RETURN(Lease dst, consumer.pool().acquire(ser.size()));
      TIDE_RETURN_IF_ERROR(readRaw(ct, *loc.descriptor, loc.offset, dst, ser.size(), timeout));
      std::vector<uint8_t> recv(dst.data(), dst.data() + ser.size());
      std::vector<Sample> samples(n);
      size_t at = 0;
      auto take = [&](void* d, size_t len) {
        std::memcpy(d, recv.data() + at, len);
        at += len;
      };
      for (int64_t row = 0; row < n; ++row) {
        Sample& s = samples[row];
        uint32_t pl = 0, rl = 0;
        take(&pl, 4);
        s.prompt.resize(pl);
        take(s.prompt.data(), pl * 4);
        take(&rl, 4);
        s.response.resize(rl);
        take(s.response.data(), rl * 4);
        s.logProbs.resize(rl);
        take(s.logProbs.data(), rl * 4);
        take(&s.reward, 4);
      }
      if (i >= cfg.warmup) t.seconds.push_back(sw.seconds());
      t.bytes = ser.size();
      if (n > 0 && samples[probe].response != std::vector<int32_t>(r.row<int32_t>(probe).begin(),
                                                                   r.row<int32_t>(probe).end()))
        return TIDE_ERROR(Code::kDataLoss, "copy path corrupted row " + std::to_string(probe));
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace tide::data
