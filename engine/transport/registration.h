#pragma once
// Registration: one region registered with a transport, deregistered when
// the object goes away (before any memory it owns is freed, so no remote
// access can touch freed memory). It either borrows the caller's memory
// (which must outlive it) or owns host memory it allocated or was handed.

#include <cstdint>
#include <memory>

#include "engine/core/status.h"
#include "engine/transport/host_memory.h"
#include "engine/transport/transport.h"

namespace tide::transport {

class Registration {
 public:
  Registration() = default;
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  Registration(Registration&& o) noexcept;
  Registration& operator=(Registration&& o) noexcept;
  ~Registration() { reset(); }

  // Registers the caller's [addr, addr+size).
  [[nodiscard]] static Result<Registration> borrow(Transport& t, void* addr, uint64_t size,
                                                   MemoryKind kind = MemoryKind::kHost);
  // Allocates `size` zeroed bytes on the heap (every page touched, as a
  // buffer filled before use would be) and registers them.
  [[nodiscard]] static Result<Registration> allocate(Transport& t, uint64_t size);
  // Registers `memory` (`size` bytes) and keeps it.
  [[nodiscard]] static Result<Registration> own(Transport& t, std::unique_ptr<uint8_t[]> memory,
                                                uint64_t size);
  // Registers memory from Transport::allocateHost() and keeps it.
  [[nodiscard]] static Result<Registration> adopt(Transport& t, HostMemory memory);

  bool registered() const { return transport_ != nullptr; }
  // The region's id; still the id it had after release() (requests naming
  // it then fail, which fault injection relies on).
  uint32_t id() const { return region_.id; }
  const LocalRegion& region() const { return region_; }
  const RemoteRegion& descriptor() const { return region_.descriptor; }
  uint8_t* data() const { return static_cast<uint8_t*>(region_.addr); }
  uint64_t size() const { return region_.size; }

  // Deregisters now and says how that went; owned memory stays.
  Status release();
  // Deregisters (an error is dropped: nothing can act on it here) and frees
  // owned memory.
  void reset();

 private:
  Transport* transport_ = nullptr;  // set while registered
  LocalRegion region_;
  std::unique_ptr<uint8_t[]> heap_;
  HostMemory host_;
};

}  // namespace tide::transport
