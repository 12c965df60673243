#pragma once
// Small RAII owners for libibverbs objects. Each is non-copyable and movable;
// destruction order is the caller's job (QPs before CQs, MRs before the PD,
// everything before the context), which member order in the owners ensures.

#include <infiniband/verbs.h>

#include <utility>

namespace tide::transport::rdma {

// What a peer may do to a registered region (and a QP allows): tide's
// one-sided writes and reads, and local writes by the NIC.
inline constexpr int kRemoteAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// Owner of one verbs handle T*, released with Free (an ibv_* destroy call).
template <typename T, int (*Free)(T*)>
class VerbsHandle {
 public:
  VerbsHandle() = default;
  explicit VerbsHandle(T* p) : p_(p) {}
  VerbsHandle(const VerbsHandle&) = delete;
  VerbsHandle& operator=(const VerbsHandle&) = delete;
  VerbsHandle(VerbsHandle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  VerbsHandle& operator=(VerbsHandle&& o) noexcept {
    if (this != &o) reset(std::exchange(o.p_, nullptr));
    return *this;
  }
  ~VerbsHandle() { reset(); }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  // Destroy errors are ignored on purpose: there is nobody left to report to.
  void reset(T* p = nullptr) {
    if (p_ != nullptr) (void)Free(p_);
    p_ = p;
  }

 private:
  T* p_ = nullptr;
};

using Context = VerbsHandle<ibv_context, ibv_close_device>;
using ProtectionDomain = VerbsHandle<ibv_pd, ibv_dealloc_pd>;
using MemoryRegion = VerbsHandle<ibv_mr, ibv_dereg_mr>;
using CompletionQueue = VerbsHandle<ibv_cq, ibv_destroy_cq>;
using CompletionChannel = VerbsHandle<ibv_comp_channel, ibv_destroy_comp_channel>;
using QueuePair = VerbsHandle<ibv_qp, ibv_destroy_qp>;

}  // namespace tide::transport::rdma
