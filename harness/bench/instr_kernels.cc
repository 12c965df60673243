#include "harness/bench/instr_kernels.h"

#include <cstring>
#include <limits>
#include <memory>

#include "engine/data/column.h"
#include "engine/data/manifest.h"
#include "engine/plan/lower_bound.h"
#include "engine/plan/reshard.h"
#include "engine/sync/delta/delta_codec.h"
#include "engine/sync/strategy_registry.h"
#include "sim/flow_solver.h"
#include "tests/engine/sync/delta/bf16_update.h"
#include "workloads/cluster.h"
#include "workloads/layout.h"
#include "workloads/model.h"
#include "workloads/rollout.h"

namespace tide::harness::bench {
namespace {

using Unit = std::function<uint64_t(int, bool&)>;

uint64_t bitsOf(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// The flow-sharing solver on the shape of p2p writes: 32 senders x 32
// receivers, each sender writing to 8 receivers (256 flows of slightly
// different sizes), drained to the last completion: one incremental
// re-solve per completion batch.
Unit flowSolver() {
  return [](int, bool& ok) -> uint64_t {
    constexpr int kN = 32, kFan = 8;
    sim::FlowSolver s;
    std::vector<sim::LinkId> tx, rx;
    for (int i = 0; i < kN; ++i) tx.push_back(s.addLink(47.5e9));
    for (int i = 0; i < kN; ++i) rx.push_back(s.addLink(47.5e9));
    for (int i = 0; i < kN; ++i)
      for (int k = 0; k < kFan; ++k)
        s.start({tx[i], rx[(i + k * 7 + 1) % kN]}, 1e9 + i * 1e3 + k, 0);
    s.resolve(0);
    uint64_t done = 0;
    double t = 0;
    while (true) {
      double next = s.nextCompletion();
      if (next == std::numeric_limits<double>::infinity()) break;
      t = next;
      done += s.popCompleted(t).size();
      s.resolve(t);
    }
    ok = done == uint64_t(kN * kFan);
    return done ^ bitsOf(t);
  };
}

// A small MoE weight update: tiny-moe (4 layers, 16 experts, MLA, FP8
// inference; 201 tensors) trained TP2 PP2 EP2, served by 2 engines of TP2
// EP2, on 8-GPU H100 nodes (the problem of `make reproduce`'s real runs).
struct SmallProblem {
  workloads::ModelSpec spec;
  workloads::ModelInventory inv;
  workloads::TrainLayout train;
  workloads::InferLayout infer;
  workloads::ClusterSpec cluster;

  SmallProblem() {
    spec = orThrow(workloads::loadModel("tiny-moe"));
    train = orThrow(workloads::parseTrainLayout("tp=2,pp=2,ep=2"));
    infer = orThrow(workloads::parseInferLayout("engines=2,tp=2,ep=2"));
    orThrow(workloads::validate(train, spec));
    orThrow(workloads::validate(infer, spec));
    cluster = orThrow(workloads::loadCluster("h100-ib-8x400:nodes=2"));
    inv = workloads::buildInventory(spec);
  }
};

// The reshard planner: base plan (ranks, tensors, holdings) and the N-D box
// overlap of every tensor's training and inference shards.
Unit planReshard() {
  auto p = std::make_shared<SmallProblem>();
  return [p](int, bool& ok) -> uint64_t {
    auto base = orThrow(plan::basePlan(p->inv, p->train, p->infer, plan::Placement{8, false}));
    auto rs = orThrow(plan::planReshard(base));
    ok = !rs.pieces.empty();
    return rs.pieces.size() * 131 + rs.sources.size() + base.tensors.size();
  };
}

// The p2p strategy's plan on that reshard (source assignment, moves,
// validation) and its lower bound.
Unit planP2p() {
  struct State {
    SmallProblem pr;
    plan::TransferPlan base;
    plan::Reshard rs;
    std::unique_ptr<sync::Strategy> strategy;
  };
  auto s = std::make_shared<State>();
  s->base = orThrow(plan::basePlan(s->pr.inv, s->pr.train, s->pr.infer, plan::Placement{8, false}));
  s->rs = orThrow(plan::planReshard(s->base));
  s->strategy = orThrow(sync::createStrategy("p2p"));
  return [s](int, bool& ok) -> uint64_t {
    auto p = orThrow(s->strategy->makePlan(sync::SyncProblem{
        &s->base, &s->rs, &s->pr.cluster, &s->pr.train, &s->pr.infer, {}, &s->pr.spec}));
    auto lb = orThrow(plan::lowerBound(p, s->pr.cluster));
    ok = !p.moves.empty() && lb.seconds > 0;
    return p.moves.size() ^ bitsOf(lb.seconds);
  };
}

// Eight bf16 tensors of 64 Ki elements and their next versions after an
// Adam-like step (relative step 1e-4: a few % of elements change at bf16).
constexpr int kDeltaTensors = 8;
constexpr size_t kDeltaElements = 64 * 1024;

struct DeltaInput {
  std::vector<sync::testing::Bf16Versions> v;
  std::vector<std::vector<uint8_t>> blocks;
  DeltaInput() {
    for (int i = 0; i < kDeltaTensors; ++i)
      v.push_back(sync::testing::adamLikeStep(kDeltaElements, 100e-6, 42 + i));
  }
};

Unit deltaEncode() {
  auto in = std::make_shared<DeltaInput>();
  auto out = std::make_shared<std::vector<uint8_t>>();
  return [in, out](int u, bool& ok) -> uint64_t {
    out->clear();
    auto st = orThrow(sync::encodeDelta(in->v[u].old, in->v[u].next, 2, {}, *out));
    ok = st.elements == kDeltaElements && st.changed > 0 && st.changed < st.elements;
    return st.encodedBytes * 31 + st.changed;
  };
}

// Applies each tensor's block to a copy of its old version (the copy is
// part of the unit) and checks the result is the new version.
Unit deltaApply() {
  auto in = std::make_shared<DeltaInput>();
  for (const auto& v : in->v) {
    in->blocks.emplace_back();
    orThrow(sync::encodeDelta(v.old, v.next, 2, {}, in->blocks.back()));
  }
  auto target = std::make_shared<std::vector<uint8_t>>(2 * kDeltaElements);
  return [in, target](int u, bool& ok) -> uint64_t {
    std::memcpy(target->data(), in->v[u].old.data(), target->size());
    size_t used = orThrow(sync::applyDelta(in->blocks[u], *target));
    ok = used == in->blocks[u].size() &&
         std::memcmp(target->data(), in->v[u].next.data(), target->size()) == 0;
    return used;
  };
}

// A rollout batch's manifest: 8 ragged int32 fields of 1024 rows.
Unit manifestDecode() {
  data::Manifest m;
  m.id = "rollout/q17";
  m.rows = 1024;
  m.regions.push_back(transport::RemoteRegion{0, 3, 1ull << 30, 0, 9, {}});
  for (int i = 0; i < 8; ++i) {
    data::FieldManifest f;
    f.name = "field" + std::to_string(i);
    f.kind = data::ColumnKind::kRagged;
    f.dtype = data::DType::kI32;
    f.valueCount = 1000;
    f.data = {0, uint64_t(i) * 16384, 4000, 0};
    f.offsets = {0, uint64_t(i) * 16384 + 8192, 1025 * 8, 0};
    m.fields.push_back(f);
  }
  auto bytes = std::make_shared<std::string>(m.encode());
  return [bytes](int, bool& ok) -> uint64_t {
    auto d = orThrow(data::Manifest::decode(*bytes));
    ok = d.fields.size() == 8 && d.rows == 1024;
    return d.fields.size() + d.payloadBytes();
  };
}

// Response token rows of 32 rollout samples (the workloads length model:
// log-normal body, Pareto tail), as an inference engine hands them over.
std::shared_ptr<const std::vector<std::vector<int32_t>>> rolloutRows() {
  workloads::RolloutConfig rc;
  rc.samplesPerStep = 32;
  auto rows = std::make_shared<std::vector<std::vector<int32_t>>>();
  for (const auto& s : workloads::generateRollout(rc, 0)) {
    std::vector<int32_t> row(s.responseTokens);
    for (size_t i = 0; i < row.size(); ++i) row[i] = int32_t(i * 2654435761u >> 16);
    rows->push_back(std::move(row));
  }
  return rows;
}

// Pack: the rows into one ragged column (values + offsets).
Unit raggedPack() {
  auto rows = rolloutRows();
  uint64_t values = 0;
  for (const auto& r : *rows) values += r.size();
  return [rows, values](int, bool& ok) -> uint64_t {
    data::Column c = orThrow(data::Column::fromRows(*rows));
    ok = c.rows() == int64_t(rows->size()) && c.payloadBytes() == values * sizeof(int32_t);
    return c.payloadBytes() + c.offsetsRef().size;
  };
}

// Unpack: every row of the column as a view through its offsets, every
// value read (no per-row decode or copy).
Unit raggedUnpack() {
  auto rows = rolloutRows();
  int64_t expected = 0;
  for (const auto& r : *rows)
    for (int32_t v : r) expected += v;
  auto col = std::make_shared<data::Column>(orThrow(data::Column::fromRows(*rows)));
  return [col, expected](int, bool& ok) -> uint64_t {
    int64_t sum = 0;
    for (int64_t i = 0; i < col->rows(); ++i)
      for (int32_t v : col->row<int32_t>(i)) sum += v;
    ok = sum == expected;
    return uint64_t(sum);
  };
}

}  // namespace

const std::vector<InstrKernel>& instrKernels() {
  static const std::vector<InstrKernel> k = {
      {"flow_solver", "sim max-min flow solver: drain 256 all-to-all flows (32x32, fan 8)", 4,
       flowSolver},
      {"plan_reshard", "base plan + reshard: tiny-moe, tp2 pp2 ep2 -> 2 engines tp2 ep2", 4,
       planReshard},
      {"plan_p2p", "p2p plan + lower bound of that reshard", 4, planP2p},
      {"delta_encode", "sparse delta encode: 8 bf16 tensors of 64 Ki elements", kDeltaTensors,
       deltaEncode},
      {"delta_apply", "sparse delta apply (+ reset copy, result check): the same 8 tensors",
       kDeltaTensors, deltaApply},
      {"manifest_decode", "rollout manifest decode: 8 ragged fields, 1024 rows", 200,
       manifestDecode},
      {"ragged_pack", "ragged column from 32 rollout rows of int32 tokens", 8, raggedPack},
      {"ragged_unpack", "read every value of that column through row views", 8, raggedUnpack},
  };
  return k;
}

}  // namespace tide::harness::bench
