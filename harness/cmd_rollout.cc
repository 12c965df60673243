// `tide rollout`: the rollout data plane, measured. Ranks run as threads of
// this process over one backend (MemoryStore rendezvous):
//  1. side by side for one batch: raw transport READ of the same bytes, tide
//     put+get into views (in place and packed), padded layout, copy path;
//  2. the rollout bus in sync or fully-async mode: samples/s and staleness.
// Lengths come from the workloads rollout model (long-tailed).

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/parse.h"
#include "engine/core/units.h"
#include "engine/data/payload_checksum.h"
#include "engine/data/rollout_bus.h"
#include "engine/data/transfer_paths.h"
#include "engine/transport/registry.h"
#include "harness/command.h"
#include "workloads/rollout.h"

namespace tide::harness {
namespace {

using data::BatchStore;
using data::BufferPool;

struct Options {
  std::string mode = "sync", backend = "shm", lenDist = "rl", json, stale = "drop";
  std::string checksums = "auto";
  std::vector<std::string> devices;
  int samples = 1024, steps = 5, producers = 1, consumers = 1, reps = 5, queue = 2;
  int64_t maxStaleness = 1;
  double trainMs = 0, timeout = 60;
  bool noPaths = false, noBus = false;
  std::string paddedLimit = "2GiB";
};

workloads::RolloutConfig lengthModel(const Options& o) {
  workloads::RolloutConfig c;
  c.samplesPerStep = o.samples;
  auto colon = o.lenDist.find(':');
  std::string kind = o.lenDist.substr(0, colon);
  std::vector<double> args;
  for (size_t at = colon; at != std::string::npos;) {
    size_t next = o.lenDist.find(':', at + 1);
    std::string tok = o.lenDist.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    auto x = parseDouble(tok, "number");
    if (!x.isOk())
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--len-dist: bad number '" + tok + "'"));
    args.push_back(*x);
    at = next;
  }
  auto need = [&](size_t n) {
    if (args.size() != n)
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--len-dist " + kind + " takes " +
                                                               std::to_string(n) + " numbers"));
  };
  if (kind == "rl") {
    need(0);
  } else if (kind == "lognormal") {  // lognormal:MEDIAN:SIGMA, no Pareto tail
    need(2);
    c.responseMedian = args[0];
    c.responseSigma = args[1];
    c.tailProb = 0;
  } else if (kind == "fixed") {  // fixed:RESPONSE_LEN (prompts fixed at 512)
    need(1);
    c.responseMedian = args[0];
    c.responseSigma = 0;
    c.promptSigma = 0;
    c.tailProb = 0;
  } else {
    throw StatusError(TIDE_ERROR(
        Code::kInvalidArgument,
        "--len-dist must be rl, lognormal:MEDIAN:SIGMA or fixed:LEN, got '" + o.lenDist + "'"));
  }
  if (c.responseMedian < 1 || c.responseSigma < 0 || c.responseSigma > 5)
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--len-dist parameters out of range"));
  return c;
}

data::RolloutShape shapeOf(const std::vector<workloads::RolloutSample>& s, size_t b, size_t e) {
  data::RolloutShape out;
  for (size_t i = b; i < e; ++i) {
    out.prompt.push_back(s[i].promptTokens);
    out.response.push_back(s[i].responseTokens);
  }
  return out;
}

struct Rank {
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<BufferPool> pool;
  std::unique_ptr<BatchStore> store;
};

std::vector<Rank> makeRanks(const Options& o, Store& kv, int n,
                            const std::vector<data::PoolConfig>& pools) {
  std::vector<std::future<Result<std::unique_ptr<transport::Transport>>>> fs;
  for (int r = 0; r < n; ++r)
    fs.push_back(std::async(std::launch::async, [&, r] {
      transport::TransportConfig c;
      c.backend = o.backend;
      c.rank = r;
      c.worldSize = n;
      c.store = &kv;
      c.devices = o.devices;
      c.connectTimeoutSeconds = o.timeout;
      c.opTimeoutSeconds = o.timeout;
      return transport::createTransport(c);
    }));
  std::vector<Rank> ranks(n);
  Status first;
  for (int r = 0; r < n; ++r) {
    auto t = fs[r].get();
    if (!t.isOk() && first.isOk()) first = t.status();
    if (t.isOk()) ranks[r].transport = std::move(t).value();
  }
  orThrow(first);
  for (int r = 0; r < n; ++r) {
    ranks[r].pool = orThrow(BufferPool::create(ranks[r].transport.get(), pools[r]));
    ranks[r].store =
        std::make_unique<BatchStore>(*ranks[r].transport, kv, *ranks[r].pool, o.timeout);
    ranks[r].store->setChecksums(orThrow(data::parseChecksumPolicy(o.checksums)));
  }
  return ranks;
}

data::PoolConfig poolFor(uint64_t bigBytes, uint32_t bigCount) {
  data::PoolConfig c;
  c.classes = {{1 << 20, 32}, {bigBytes + 4096, bigCount}};
  c.waitTimeoutSeconds = 60;
  return c;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

nlohmann::json runPaths(const Options& o, const std::vector<workloads::RolloutSample>& samples) {
  data::RolloutShape shape = shapeOf(samples, 0, samples.size());
  data::PathsConfig pc;
  pc.reps = o.reps;
  pc.paddedLimitBytes = orThrow(parseSize(o.paddedLimit));
  uint64_t big = shape.raggedBytes();
  if (shape.paddedBytes() <= pc.paddedLimitBytes) big = std::max(big, shape.paddedBytes());
  MemoryStore kv;
  auto ranks = makeRanks(o, kv, 2, {poolFor(big, 2), poolFor(big, 2)});
  auto paths = orThrow(data::measurePaths(*ranks[0].store, *ranks[1].store, shape, pc));
  double rawMedian = paths[0].median();
  std::printf("%s, %d samples: ragged %s, padded %s (ragged saves %.1f%%)\n", o.backend.c_str(),
              o.samples, formatBytes(shape.raggedBytes()).c_str(),
              formatBytes(shape.paddedBytes()).c_str(),
              100.0 * (1.0 - double(shape.raggedBytes()) / double(shape.paddedBytes())));
  std::printf("payload checksums: %s (%s)\n", ranks[0].store->checksumsOnPut() ? "on" : "off",
              data::hashImplementation());
  std::printf("%-16s %14s %11s %11s %12s %12s %9s\n", "path", "bytes", "median_s", "p95_s",
              "gbps_median", "gbps_p95", "vs_raw");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : paths) {
    nlohmann::json j{{"path", p.path}, {"bytes", p.bytes}};
    if (!p.skipped.empty()) {
      j["skipped"] = p.skipped;
      std::printf("%-16s %14llu skipped: %s\n", p.path.c_str(), (unsigned long long)p.bytes,
                  p.skipped.c_str());
    } else {
      // Ratio in time for the same rollout: raw moves tide's bytes.
      double ratio = rawMedian / p.median();
      j.update({{"median_s", p.median()},
                {"p95_s", p.p95()},
                {"gbps_median", gbps(p.bytes, p.median())},
                {"gbps_p95", gbps(p.bytes, p.p95())},
                {"rollout_gbps_median", gbps(paths[0].bytes, p.median())},
                {"ratio_to_raw", ratio},
                {"reps", p.seconds.size()},
                {"seconds", p.seconds}});
      std::printf("%-16s %14llu %11.4f %11.4f %12.3f %12.3f %8.2fx\n", p.path.c_str(),
                  (unsigned long long)p.bytes, p.median(), p.p95(), gbps(p.bytes, p.median()),
                  gbps(p.bytes, p.p95()), ratio);
    }
    out.push_back(j);
  }
  return nlohmann::json{
      {"checksums", ranks[0].store->checksumsOnPut() ? "on" : "off"},
      {"hash", data::hashImplementation()},
      {"ragged_bytes", shape.raggedBytes()},
      {"padded_bytes", shape.paddedBytes()},
      {"ragged_saving", 1.0 - double(shape.raggedBytes()) / double(shape.paddedBytes())},
      {"paths", out}};
}

nlohmann::json runBus(const Options& o, const workloads::RolloutConfig& lm) {
  const int P = o.producers, C = o.consumers, world = P + C;
  const bool async = o.mode == "async";
  std::vector<std::vector<workloads::RolloutSample>> steps(o.steps);
  uint64_t maxShare = 0;
  for (int s = 0; s < o.steps; ++s) {
    steps[s] = workloads::generateRollout(lm, s);
    for (int p = 0; p < P; ++p)
      maxShare = std::max(
          maxShare,
          shapeOf(steps[s], steps[s].size() * p / P, steps[s].size() * (p + 1) / P).raggedBytes());
  }
  std::vector<data::PoolConfig> pools;
  for (int r = 0; r < world; ++r)
    pools.push_back(poolFor(maxShare, r < P ? uint32_t(o.queue + 2) : uint32_t(P + 2)));
  data::BusConfig bc;
  bc.mode = orThrow(data::parseBusMode(o.mode));
  bc.producers = P;
  bc.consumers = C;
  bc.queueCapacity = o.queue;
  bc.maxStaleness = o.maxStaleness;
  bc.stalePolicy = orThrow(data::parseStalePolicy(o.stale));
  bc.name = "rollout";
  bc.timeoutSeconds = o.timeout;
  bc.totalBatches = int64_t(o.steps) * P;
  MemoryStore kv;
  auto ranks = makeRanks(o, kv, world, pools);
  orThrow(kv.set("weights/version", "0"));

  std::vector<Status> errors(world);
  std::vector<double> stepSeconds, buildSeconds(P, 0);
  std::vector<data::BusStats> stats(C);
  std::vector<int64_t> consumedSamples(C, 0);
  std::vector<double> activeSeconds(C, 0);
  std::vector<std::thread> threads;
  for (int p = 0; p < P; ++p)
    threads.emplace_back([&, p] {
      data::RolloutProducer prod(*ranks[p].store, kv, bc, p);
      auto run = [&]() -> Status {
        for (int s = 0; s < o.steps; ++s) {
          size_t n = steps[s].size();
          Stopwatch build;
          TIDE_ASSIGN_OR_RETURN(
              data::Batch b, data::buildRolloutBatch(shapeOf(steps[s], n * p / P, n * (p + 1) / P),
                                                     uint64_t(s * P + p), ranks[p].pool.get()));
          buildSeconds[p] += build.seconds();
          if (!async) {
            TIDE_RETURN_IF_ERROR(storeBarrier(kv, "ready" + std::to_string(s), world, o.timeout));
            TIDE_RETURN_IF_ERROR(prod.putStep(s, b));
            TIDE_RETURN_IF_ERROR(prod.endStep(s));
          } else {
            TIDE_ASSIGN_OR_RETURN(std::string v, kv.get("weights/version", o.timeout));
            TIDE_ASSIGN_OR_RETURN(int64_t version, parseSigned(v, "weights version in the store"));
            TIDE_RETURN_IF_ERROR(prod.put(std::move(b), version));
          }
        }
        // Async: keep our published memory until every slot is consumed.
        while (async && ranks[p].store->holding() > 0) {
          TIDE_RETURN_IF_ERROR(prod.reap().status());
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return Status::ok();
      };
      errors[p] = run();
    });
  for (int c = 0; c < C; ++c)
    threads.emplace_back([&, c] {
      data::RolloutConsumer cons(*ranks[P + c].store, kv, bc, c);
      auto run = [&]() -> Status {
        if (!async) {
          for (int s = 0; s < o.steps; ++s) {
            TIDE_RETURN_IF_ERROR(storeBarrier(kv, "ready" + std::to_string(s), world, o.timeout));
            Stopwatch sw;
            TIDE_ASSIGN_OR_RETURN(auto batches, cons.getStep(s));
            TIDE_RETURN_IF_ERROR(cons.endStep(s));
            double t = sw.seconds();
            for (int p = 0; p < P; ++p) {
              size_t n = steps[s].size(), share = n * (p + 1) / P - n * p / P;
              if (batches[p].rows() > 0)
                TIDE_RETURN_IF_ERROR(data::checkRolloutRow(batches[p], 0, int64_t(share * c / C),
                                                           uint64_t(s * P + p)));
            }
            if (s == 0) continue;  // warm-up
            if (c == 0) stepSeconds.push_back(t);
            for (auto& b : batches) consumedSamples[c] += b.rows();
            activeSeconds[c] += t;
          }
          return Status::ok();
        }
        Stopwatch sw;
        bool warm = false;
        while (true) {
          TIDE_ASSIGN_OR_RETURN(std::string v, kv.get("weights/version", o.timeout));
          TIDE_ASSIGN_OR_RETURN(int64_t version, parseSigned(v, "weights version in the store"));
          auto d = cons.get(version);
          if (!d.isOk() && d.status().code() == Code::kOutOfRange) break;
          if (!d.isOk()) return d.status();
          if (!warm) {
            warm = true;  // the first batch waits for the pipeline to fill
            sw.reset();
          } else {
            consumedSamples[c] += d->batch.rows();
          }
          if (o.trainMs > 0)
            std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.trainMs));
          if (c == 0) TIDE_RETURN_IF_ERROR(kv.add("weights/version", 1).status());
        }
        activeSeconds[c] = sw.seconds();
        stats[c] = cons.stats();
        return Status::ok();
      };
      errors[P + c] = run();
      if (!async) stats[c] = cons.stats();
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors) orThrow(e);

  int64_t samples = 0, dropped = 0, acceptedStale = 0;
  double active = 0;
  std::vector<double> staleness;
  for (int c = 0; c < C; ++c) {
    samples += consumedSamples[c];
    active = std::max(active, activeSeconds[c]);
    dropped += stats[c].dropped;
    acceptedStale += stats[c].acceptedStale;
    for (auto s : stats[c].staleness) staleness.push_back(double(s));
  }
  double sps = active > 0 ? double(samples) / active : 0;
  nlohmann::json j{{"mode", o.mode},
                   {"producers", P},
                   {"consumers", C},
                   {"steps", o.steps},
                   {"samples_per_step", o.samples},
                   {"measured_samples", samples},
                   {"measured_seconds", active},
                   {"samples_per_s", sps},
                   {"build_seconds_per_producer", buildSeconds},
                   {"staleness_median", pct(staleness, 0.5)},
                   {"staleness_p95", pct(staleness, 0.95)},
                   {"staleness_max",
                    staleness.empty() ? 0 : *std::max_element(staleness.begin(), staleness.end())},
                   {"dropped_batches", dropped},
                   {"accepted_stale_batches", acceptedStale}};
  if (!async) {
    j["step_s_median"] = pct(stepSeconds, 0.5);
    j["step_s_p95"] = pct(stepSeconds, 0.95);
  } else {
    j["queue_capacity"] = o.queue;
    j["max_staleness"] = o.maxStaleness;
    j["stale_policy"] = o.stale;
    j["train_ms"] = o.trainMs;
  }
  std::printf(
      "bus %s: %lld samples in %.3f s = %.0f samples/s; staleness median %.1f p95 %.1f max %.0f; "
      "dropped %lld\n",
      o.mode.c_str(), (long long)samples, active, sps, pct(staleness, 0.5), pct(staleness, 0.95),
      j["staleness_max"].get<double>(), (long long)dropped);
  return j;
}

}  // namespace

void addRolloutCommand(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("rollout", "Measure the rollout data plane (batches, bus, paths)");
  cmd->add_option("--mode", o->mode, "sync | async")->check(CLI::IsMember({"sync", "async"}));
  cmd->add_option("--backend", o->backend, "tcp | shm | rdma");
  cmd->add_option("--samples", o->samples, "samples per step (one batch)")
      ->check(CLI::Range(1, 10000000));
  cmd->add_option("--len-dist", o->lenDist, "rl | lognormal:MEDIAN:SIGMA | fixed:LEN");
  cmd->add_option("--steps", o->steps, "bus steps (the first is warm-up)")
      ->check(CLI::Range(2, 100000));
  cmd->add_option("--producers", o->producers, "rollout workers")->check(CLI::Range(1, 64));
  cmd->add_option("--consumers", o->consumers, "trainer ranks")->check(CLI::Range(1, 64));
  cmd->add_option("--reps", o->reps, "timed repetitions per path (after one warm-up)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--queue", o->queue, "async: queue capacity in batches")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-staleness", o->maxStaleness, "async: versions a batch may lag")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--stale", o->stale, "async: drop | accept")
      ->check(CLI::IsMember({"drop", "accept"}));
  cmd->add_option("--train-ms", o->trainMs, "async: simulated train time per batch")
      ->check(CLI::Range(0.0, 600000.0));
  cmd->add_option("--padded-limit", o->paddedLimit, "skip the padded path above this size");
  cmd->add_option("--device", o->devices, "rdma: device names");
  cmd->add_option("--timeout", o->timeout, "seconds before a stuck peer is an error")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--checksums", o->checksums,
                  "payload checksums: auto (on where peers may be on other hosts: tcp, rdma) | "
                  "on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_flag("--no-paths", o->noPaths, "skip the side-by-side path comparison");
  cmd->add_flag("--no-bus", o->noBus, "skip the bus run");
  cmd->add_option("--json", o->json, "write results to this file");
  cmd->callback([o] {
    if (o->noPaths && o->noBus) {
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument,
                                   "--no-paths and --no-bus together leave nothing to run"));
    }
    // The data plane needs one-sided writes: nccl has none.
    if (o->backend != "tcp" && o->backend != "shm" && o->backend != "rdma") {
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--backend " + o->backend +
                                                               ": not a rollout backend (known: "
                                                               "tcp, shm, rdma)"));
    }
    std::string why = transport::whyNotCompiled(o->backend);
    if (!why.empty())
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--backend " + o->backend + ": " + why));
    auto lm = lengthModel(*o);
    nlohmann::json j{{"backend", o->backend},
                     {"samples", o->samples},
                     {"len_dist", o->lenDist},
                     {"units", "bytes; seconds; gbps = 1e9 B/s"}};
    if (!o->noPaths) j["side_by_side"] = runPaths(*o, workloads::generateRollout(lm, 0));
    if (!o->noBus) j["bus"] = runBus(*o, lm);
    if (!o->json.empty()) {
      std::ofstream f(o->json);
      f << j.dump(2) << "\n";
      if (!f) throw StatusError(TIDE_ERROR(Code::kUnavailable, "cannot write " + o->json));
    }
  });
}

}  // namespace tide::harness
