#include "engine/transport/registration.h"

#include <utility>

namespace tide::transport {

Registration::Registration(Registration&& o) noexcept
    : transport_(std::exchange(o.transport_, nullptr)),
      region_(std::exchange(o.region_, {})),
      heap_(std::move(o.heap_)),
      host_(std::move(o.host_)) {}

Registration& Registration::operator=(Registration&& o) noexcept {
  if (this != &o) {
    reset();
    transport_ = std::exchange(o.transport_, nullptr);
    region_ = std::exchange(o.region_, {});
    heap_ = std::move(o.heap_);
    host_ = std::move(o.host_);
  }
  return *this;
}

Result<Registration> Registration::borrow(Transport& t, void* addr, uint64_t size,
                                          MemoryKind kind) {
  Registration r;
  TIDE_ASSIGN_OR_RETURN(r.region_, t.registerRegion(addr, size, kind));
  r.transport_ = &t;
  return r;
}

Result<Registration> Registration::allocate(Transport& t, uint64_t size) {
  return own(t, std::make_unique<uint8_t[]>(size), size);
}

Result<Registration> Registration::own(Transport& t, std::unique_ptr<uint8_t[]> memory,
                                       uint64_t size) {
  TIDE_ASSIGN_OR_RETURN(Registration r, borrow(t, memory.get(), size));
  r.heap_ = std::move(memory);
  return r;
}

Result<Registration> Registration::adopt(Transport& t, HostMemory memory) {
  TIDE_ASSIGN_OR_RETURN(Registration r, borrow(t, memory.data(), memory.size()));
  r.host_ = std::move(memory);
  return r;
}

Status Registration::release() {
  if (transport_ == nullptr) return Status::ok();
  return std::exchange(transport_, nullptr)->deregisterRegion(region_.id);
}

void Registration::reset() {
  (void)release();
  region_ = {};
  heap_.reset();
  host_.reset();
}

}  // namespace tide::transport
