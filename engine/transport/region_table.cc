#include "engine/transport/region_table.h"

#include <random>
#include <string>
#include <utility>

namespace tide::transport {

uint64_t randomKey() {
  static std::mutex mu;
  static std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  std::lock_guard lock(mu);
  uint64_t v = 0;
  while (v == 0) v = gen();
  return v;
}

RegionLease::RegionLease(RegionLease&& o) noexcept
    : table_(std::exchange(o.table_, nullptr)), id_(o.id_), data_(o.data_) {}

RegionLease& RegionLease::operator=(RegionLease&& o) noexcept {
  if (this != &o) {
    release();
    table_ = std::exchange(o.table_, nullptr);
    id_ = o.id_;
    data_ = o.data_;
  }
  return *this;
}

RegionLease::~RegionLease() {
  release();
}

void RegionLease::release() {
  if (table_ != nullptr) std::exchange(table_, nullptr)->releaseLease(id_);
}

Result<LocalRegion> RegionTable::add(void* addr, uint64_t size, MemoryKind kind) {
  if (addr == nullptr && size > 0)
    return TIDE_ERROR(Code::kInvalidArgument, "cannot register a null address");
  if (reinterpret_cast<uintptr_t>(addr) > UINTPTR_MAX - size)
    return TIDE_ERROR(Code::kInvalidArgument, "region wraps around the address space");
  std::lock_guard lock(mu_);
  uint32_t id = nextId_++;
  Entry e;
  e.addr = static_cast<char*>(addr);
  e.size = size;
  e.key = randomKey();
  e.kind = kind;
  regions_.emplace(id, e);
  LocalRegion r;
  r.id = id;
  r.addr = addr;
  r.size = size;
  r.kind = kind;
  r.descriptor.rank = rank_;
  r.descriptor.id = id;
  r.descriptor.size = size;
  r.descriptor.base = 0;
  r.descriptor.key = e.key;
  return r;
}

Status RegionTable::remove(uint32_t id) {
  std::unique_lock lock(mu_);
  auto it = regions_.find(id);
  if (it == regions_.end() || it->second.removing)
    return TIDE_ERROR(Code::kNotFound, "region " + std::to_string(id) + " is not registered");
  it->second.removing = true;  // no new lease from here on
  released_.wait(lock, [&] { return it->second.leases == 0; });
  regions_.erase(it);
  return Status::ok();
}

Status RegionTable::check(const Entry* e, uint32_t id, uint64_t offset, uint64_t length) const {
  if (e == nullptr)
    return TIDE_ERROR(Code::kNotFound, "region " + std::to_string(id) +
                                           " is not registered on rank " + std::to_string(rank_));
  if (offset > e->size || length > e->size - offset)
    return TIDE_ERROR(Code::kOutOfRange, "access [" + std::to_string(offset) + ", +" +
                                             std::to_string(length) + ") is outside region " +
                                             std::to_string(id) + " of " + std::to_string(e->size) +
                                             " bytes on rank " + std::to_string(rank_));
  return Status::ok();
}

Result<RegionLease> RegionTable::acquire(uint32_t id, uint64_t offset, uint64_t length,
                                         uint64_t key) {
  std::lock_guard lock(mu_);
  auto it = regions_.find(id);
  Entry* e = (it == regions_.end() || it->second.removing) ? nullptr : &it->second;
  TIDE_RETURN_IF_ERROR(check(e, id, offset, length));
  if (key != e->key)
    return TIDE_ERROR(Code::kPermissionDenied, "wrong access key for region " + std::to_string(id) +
                                                   " on rank " + std::to_string(rank_));
  ++e->leases;
  RegionLease lease;
  lease.table_ = this;
  lease.id_ = id;
  lease.data_ = e->addr + offset;
  return lease;
}

Result<char*> RegionTable::localRange(uint32_t id, uint64_t offset, uint64_t length) {
  std::lock_guard lock(mu_);
  auto it = regions_.find(id);
  Entry* e = (it == regions_.end() || it->second.removing) ? nullptr : &it->second;
  TIDE_RETURN_IF_ERROR(check(e, id, offset, length).withContext("local region"));
  return e->addr + offset;
}

size_t RegionTable::size() const {
  std::lock_guard lock(mu_);
  return regions_.size();
}

void RegionTable::releaseLease(uint32_t id) {
  std::lock_guard lock(mu_);
  auto it = regions_.find(id);
  if (it != regions_.end() && --it->second.leases == 0 && it->second.removing)
    released_.notify_all();
}

}  // namespace tide::transport
