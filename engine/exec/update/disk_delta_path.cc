#include "engine/exec/update/disk_delta_path.h"

#include <cstring>
#include <filesystem>
#include <span>

#include "engine/exec/executor/incoming_groups.h"

namespace tide::exec {

using plan::Space;

namespace {

std::string commitKey(uint64_t version) {
  return "disk-delta/committed/" + std::to_string(version);
}

// A trainer's slice: every block of its staging replica (or, without one,
// of its training shard), in layout order.
struct SliceOf {
  Space space = Space::kTrain;
  sync::DiskDeltaSlice slice;
  std::vector<uint64_t> offsets;
};

Result<SliceOf> sliceOf(const RankLayout& layout) {
  SliceOf s;
  s.space = layout.spaceBytes(Space::kStaging) > 0 ? Space::kStaging : Space::kTrain;
  for (const auto& p : layout.placed(s.space)) {
    if (p.dtype != workloads::DType::kBF16) {
      return TIDE_ERROR(Code::kUnimplemented, "disk-delta: trainer slices must be bf16");
    }
    s.slice.tensorBytes.push_back(p.bytes);
    s.slice.elemBytes.push_back(2);
    s.offsets.push_back(p.offset);
  }
  return s;
}

Status checkSource(const OutGroup& g, Space space) {
  if (g.srcSpace != space || g.dstSpace != Space::kInfer || g.hop) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "disk-delta: needs a p2p plan (writes from one trainer space straight "
                      "into inference shards)");
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<DiskDeltaPath>> DiskDeltaPath::create(const plan::TransferPlan& plan,
                                                             const std::vector<RankLayout>& layouts,
                                                             const RankSchedule& schedule,
                                                             Store& store,
                                                             DiskDeltaPathOptions options) {
  if (options.dir.empty()) {
    return TIDE_ERROR(Code::kInvalidArgument, "disk-delta: no directory given");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "disk-delta: cannot create " + options.dir + ": " + ec.message());
  }
  std::unique_ptr<DiskDeltaPath> p(new DiskDeltaPath(schedule, store, options));
  sync::DiskDeltaOptions ddo;
  ddo.dir = options.dir;
  ddo.baseEvery = options.baseEvery;
  std::vector<int> writerIndex(plan.ranks.size(), -1);
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    if (plan.ranks[r].role == plan::Role::kTrainer)
      writerIndex[r] = static_cast<int>(p->trainers_++);
  }
  const uint32_t me = schedule.rank;
  p->writerIndex_ = writerIndex[me];
  if (p->writerIndex_ >= 0) {
    if (!schedule.in.empty()) {
      return TIDE_ERROR(Code::kUnimplemented, "disk-delta: a trainer rank that also receives");
    }
    TIDE_ASSIGN_OR_RETURN(SliceOf s, sliceOf(layouts[me]));
    for (const auto& g : schedule.out) TIDE_RETURN_IF_ERROR(checkSource(g, s.space));
    p->sliceSpace_ = s.space;
    p->sliceOffsets_ = std::move(s.offsets);
    p->writer_ = std::make_unique<sync::DiskDeltaWriter>(
        ddo, static_cast<uint32_t>(p->writerIndex_), std::move(s.slice));
  }
  TIDE_ASSIGN_OR_RETURN(auto incoming, incomingGroups(plan, layouts, schedule));
  std::vector<int> sourceOf(plan.ranks.size(), -1);
  for (size_t u = 0; u < incoming.size(); ++u) {
    const int src = schedule.in[u].src;
    if (writerIndex[src] < 0) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "disk-delta: rank " + std::to_string(src) + " sends but is no trainer");
    }
    if (sourceOf[src] < 0) {
      TIDE_ASSIGN_OR_RETURN(SliceOf s, sliceOf(layouts[src]));
      Source so;
      so.rank = src;
      so.space = s.space;
      so.mirror.assign(layouts[src].spaceBytes(s.space), 0);
      for (size_t t = 0; t < s.offsets.size(); ++t) {
        so.targets.emplace_back(so.mirror.data() + s.offsets[t], s.slice.tensorBytes[t]);
      }
      so.reader = std::make_unique<sync::DiskDeltaReader>(
          ddo, static_cast<uint32_t>(writerIndex[src]), std::move(s.slice));
      sourceOf[src] = static_cast<int>(p->sources_.size());
      p->sources_.push_back(std::move(so));
    }
    TIDE_RETURN_IF_ERROR(checkSource(incoming[u], p->sources_[sourceOf[src]].space));
    p->copies_.push_back(Copy{static_cast<size_t>(sourceOf[src]), std::move(incoming[u].runs)});
  }
  return p;
}

Status DiskDeltaPath::step(uint64_t version, const Buffers& buffers, DiskDeltaCounters& counters) {
  if (writer_) TIDE_RETURN_IF_ERROR(writeStep(version, buffers, counters));
  if (!sources_.empty()) TIDE_RETURN_IF_ERROR(readStep(version, buffers, counters));
  return Status::ok();
}

Status DiskDeltaPath::writeStep(uint64_t version, const Buffers& buffers,
                                DiskDeltaCounters& counters) {
  // The plan's local tasks of a trainer only convert its shard into the
  // source space; they depend on nothing received.
  for (const LocalTask& t : schedule_.local) {
    const uint8_t* src = buffers[static_cast<int>(t.srcSpace)];
    uint8_t* dst = buffers[static_cast<int>(t.dstSpace)];
    for (const Run& r : t.runs) std::memcpy(dst + r.dstOffset, src + r.srcOffset, r.bytes);
  }
  const uint8_t* base = buffers[static_cast<int>(sliceSpace_)];
  std::vector<std::span<const uint8_t>> tensors;
  tensors.reserve(sliceOffsets_.size());
  const auto& bytes = writer_->slice().tensorBytes;
  for (size_t i = 0; i < sliceOffsets_.size(); ++i) {
    tensors.emplace_back(base + sliceOffsets_[i], bytes[i]);
  }
  TIDE_ASSIGN_OR_RETURN(auto ws, writer_->writeStep(version, tensors));
  counters.fileBytes += ws.record.bytes;
  counters.sliceBytes += ws.sliceBytes;
  counters.elements += ws.elements;
  counters.changed += ws.changed;
  sync::DiskDeltaOptions o = writer_->options();
  TIDE_RETURN_IF_ERROR(
      sync::publishAndCommit(store_, o, trainers_, version, ws, options_.timeoutSeconds));
  if (writerIndex_ == 0) TIDE_RETURN_IF_ERROR(store_.set(commitKey(version), "1"));
  return Status::ok();
}

Status DiskDeltaPath::readStep(uint64_t version, const Buffers& buffers,
                               DiskDeltaCounters& counters) {
  auto committed = store_.get(commitKey(version), options_.timeoutSeconds);
  if (!committed.isOk()) {
    return committed.status().withContext("disk-delta: version " + std::to_string(version) +
                                          " was not committed");
  }
  // Every mirror reaches the version before any shard byte changes, so a bad
  // file leaves the shard on the previous complete version.
  for (Source& s : sources_) {
    const uint64_t before = s.reader->stats().bytesRead;
    TIDE_RETURN_IF_ERROR(s.reader->update(s.targets, s.current, version));
    counters.bytesRead += s.reader->stats().bytesRead - before;
  }
  uint8_t* dst = buffers[static_cast<int>(Space::kInfer)];
  for (const Copy& c : copies_) {
    const uint8_t* src = sources_[c.source].mirror.data();
    for (const Run& r : c.runs) std::memcpy(dst + r.dstOffset, src + r.srcOffset, r.bytes);
  }
  return Status::ok();
}

uint64_t DiskDeltaPath::mirrorBytes() const {
  uint64_t n = 0;
  for (const auto& s : sources_) n += s.mirror.size();
  return n;
}

}  // namespace tide::exec
