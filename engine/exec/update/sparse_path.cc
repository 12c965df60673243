#include "engine/exec/update/sparse_path.h"

#include <cstring>
#include <span>
#include <string>

#include "engine/exec/executor/incoming_groups.h"
#include "engine/sync/delta/delta_codec.h"

namespace tide::exec {

using plan::Space;

namespace {

std::string inboxKey(int rank) {
  return "sparse/inbox/r" + std::to_string(rank);
}
std::string slotsKey(int rank) {
  return "sparse/slots/r" + std::to_string(rank);
}

// Gathers the runs' bytes of one side (source or destination offsets) into `out`.
void gather(const uint8_t* base, const std::vector<Run>& runs, bool dstSide,
            std::vector<uint8_t>& out) {
  uint64_t n = 0;
  for (const Run& r : runs) n += r.bytes;
  out.resize(n);
  uint64_t at = 0;
  for (const Run& r : runs) {
    std::memcpy(out.data() + at, base + (dstSide ? r.dstOffset : r.srcOffset), r.bytes);
    at += r.bytes;
  }
}

}  // namespace

uint64_t sparseSlotBytes(uint64_t bytes) {
  // Header (68 bytes) + at most the raw values; round to a cache line.
  return (bytes + 128 + 63) / 64 * 64;
}

SparsePath::~SparsePath() = default;

Result<std::unique_ptr<SparsePath>> SparsePath::create(const plan::TransferPlan& plan,
                                                       const std::vector<RankLayout>& layouts,
                                                       const RankSchedule& schedule,
                                                       const workloads::SyntheticWeights& weights,
                                                       transport::Transport& transport,
                                                       Store& store, double timeoutSeconds) {
  std::unique_ptr<SparsePath> p(new SparsePath(schedule, transport));
  const int rank = static_cast<int>(schedule.rank);
  for (const auto& g : schedule.out) {
    if (g.hop || g.dstSpace != Space::kInfer) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "sparse: needs a plan whose writes land directly in the inference "
                        "shards (p2p), not relays or buckets");
    }
  }
  // Inbox: one slot per incoming unit; its offsets are published for the senders.
  TIDE_ASSIGN_OR_RETURN(p->incoming_, incomingGroups(plan, layouts, schedule));
  p->inSlot_.resize(p->incoming_.size());
  for (size_t u = 0; u < p->incoming_.size(); ++u) {
    p->inSlot_[u] = p->inboxBytes_;
    p->inboxBytes_ += sparseSlotBytes(p->incoming_[u].bytes);
  }
  if (p->inboxBytes_ > 0) {
    TIDE_ASSIGN_OR_RETURN(p->inbox_, transport::Registration::allocate(transport, p->inboxBytes_));
    TIDE_RETURN_IF_ERROR(store.set(inboxKey(rank), p->inbox_.descriptor().serialize()));
    std::string slots(p->inSlot_.size() * sizeof(uint64_t), '\0');
    std::memcpy(slots.data(), p->inSlot_.data(), slots.size());
    TIDE_RETURN_IF_ERROR(store.set(slotsKey(rank), slots));
  }
  // Outbox: one slot per outgoing group (all may be in flight at once).
  p->outSlot_.resize(schedule.out.size());
  for (size_t i = 0; i < schedule.out.size(); ++i) {
    p->outSlot_[i] = p->outboxBytes_;
    p->outboxBytes_ += sparseSlotBytes(schedule.out[i].bytes);
  }
  if (p->outboxBytes_ > 0) {
    TIDE_ASSIGN_OR_RETURN(p->outbox_,
                          transport::Registration::allocate(transport, p->outboxBytes_));
  }
  // The inboxes of the peers this rank writes to.
  p->peerInbox_.assign(plan.ranks.size(), 0);
  p->peerSlots_.resize(plan.ranks.size());
  std::vector<char> sourceSpace(kSpaceCount, 0);
  for (const auto& g : schedule.out) {
    sourceSpace[static_cast<int>(g.srcSpace)] = 1;
    if (!p->peerSlots_[g.peer].empty()) continue;
    TIDE_ASSIGN_OR_RETURN(std::string desc, store.get(inboxKey(g.peer), timeoutSeconds));
    TIDE_ASSIGN_OR_RETURN(auto remote, transport::RemoteRegion::deserialize(desc));
    TIDE_RETURN_IF_ERROR(transport.importRegion(remote));
    p->peerInbox_[g.peer] = remote.id;
    TIDE_ASSIGN_OR_RETURN(std::string slots, store.get(slotsKey(g.peer), timeoutSeconds));
    if (slots.empty() || slots.size() % sizeof(uint64_t) != 0) {
      return TIDE_ERROR(Code::kDataLoss,
                        "sparse: bad inbox slot table from rank " + std::to_string(g.peer));
    }
    auto& v = p->peerSlots_[g.peer];
    v.resize(slots.size() / sizeof(uint64_t));
    std::memcpy(v.data(), slots.data(), slots.size());
  }
  // Version 0 of the source spaces, to encode the first update against.
  const RankLayout& me = layouts[rank];
  for (int s = 0; s < kSpaceCount; ++s) {
    if (!sourceSpace[s]) continue;
    p->prev_[s].assign(me.spaceBytes(static_cast<Space>(s)), 0);
    for (const auto& pl : me.placed(static_cast<Space>(s))) {
      if (pl.dtype != workloads::DType::kBF16) {
        return TIDE_ERROR(Code::kUnimplemented, "sparse: source blocks must be bf16");
      }
      auto* out = reinterpret_cast<uint16_t*>(p->prev_[s].data() + pl.offset);
      TIDE_RETURN_IF_ERROR(
          weights.fillBox(pl.tensor, pl.box.toBox(), 0, std::span(out, pl.box.volume())));
    }
  }
  return p;
}

Result<transport::Request> SparsePath::encode(size_t group, const Buffers& buffers) {
  const OutGroup& g = schedule_.out[group];
  const int s = static_cast<int>(g.srcSpace);
  gather(prev_[s].data(), g.runs, false, old_);
  gather(buffers[s], g.runs, false, next_);
  enc_.clear();
  TIDE_ASSIGN_OR_RETURN(auto st, sync::encodeDelta(old_, next_, 2, sync::DeltaOptions{}, enc_));
  const auto& slots = peerSlots_[g.peer];
  if (g.unit >= slots.size() || enc_.size() > sparseSlotBytes(g.bytes)) {
    return TIDE_ERROR(Code::kInternal, "sparse: block of " + std::to_string(enc_.size()) +
                                           " bytes does not fit unit " + std::to_string(g.unit) +
                                           " of rank " + std::to_string(g.peer));
  }
  std::memcpy(outbox_.data() + outSlot_[group], enc_.data(), enc_.size());
  counters_.encodedBytes += enc_.size();
  counters_.fullBytes += g.bytes;
  counters_.elements += st.elements;
  counters_.changed += st.changed;
  transport::Request q;
  q.op = transport::Op::kWriteWithImm;
  q.localRegion = outbox_.id();
  q.localOffset = outSlot_[group];
  q.peer = g.peer;
  q.remoteRegion = peerInbox_[g.peer];
  q.remoteOffset = slots[g.unit];
  q.length = enc_.size();
  q.imm = g.unit;
  return q;
}

std::string SparsePath::where(uint32_t unit) const {
  return "sparse: rank " + std::to_string(schedule_.rank) + " unit " + std::to_string(unit) +
         " from rank " + std::to_string(schedule_.in[unit].src);
}

Status SparsePath::check(uint32_t unit, const Buffers& buffers) {
  const OutGroup& g = incoming_[unit];
  const uint8_t* dst = buffers[static_cast<int>(g.dstSpace)];
  std::span<const uint8_t> block(inbox_.data() + inSlot_[unit], sparseSlotBytes(g.bytes));
  Status st = Status::ok();
  if (g.runs.size() == 1) {
    st = sync::checkDelta(block, std::span(dst + g.runs[0].dstOffset, g.runs[0].bytes));
  } else {
    gather(dst, g.runs, true, old_);
    st = sync::checkDelta(block, old_);
  }
  return st.isOk() ? st : st.withContext(where(unit));
}

Status SparsePath::applyAll(const Buffers& buffers) {
  for (uint32_t unit = 0; unit < incoming_.size(); ++unit) {
    const OutGroup& g = incoming_[unit];
    uint8_t* dst = buffers[static_cast<int>(g.dstSpace)];
    std::span<const uint8_t> block(inbox_.data() + inSlot_[unit], sparseSlotBytes(g.bytes));
    if (g.runs.size() == 1) {
      auto r = sync::applyDelta(block, std::span(dst + g.runs[0].dstOffset, g.runs[0].bytes),
                                /*checked=*/true);
      if (!r.isOk()) return r.status().withContext(where(unit));
      continue;
    }
    gather(dst, g.runs, true, old_);
    auto r = sync::applyDelta(block, old_, /*checked=*/true);
    if (!r.isOk()) return r.status().withContext(where(unit));
    uint64_t at = 0;
    for (const Run& run : g.runs) {
      std::memcpy(dst + run.dstOffset, old_.data() + at, run.bytes);
      at += run.bytes;
    }
  }
  return Status::ok();
}

void SparsePath::commit(const Buffers& buffers) {
  for (int s = 0; s < kSpaceCount; ++s) {
    if (!prev_[s].empty()) std::memcpy(prev_[s].data(), buffers[s], prev_[s].size());
  }
}

SparseCounters SparsePath::takeCounters() {
  SparseCounters c = counters_;
  counters_ = {};
  return c;
}

uint64_t SparsePath::memoryBytes() const {
  uint64_t n = inboxBytes_ + outboxBytes_;
  for (const auto& v : prev_) n += v.size();
  return n;
}

}  // namespace tide::exec
