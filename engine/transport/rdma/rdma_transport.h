#pragma once
// libibverbs backend: RC queue pairs, one-sided RDMA WRITE / READ /
// WRITE_WITH_IMM, requests sliced over config.streams QPs per peer and over
// every device in config.devices (one rail per device), selective signalling
// on a bounded send queue, busy-poll or event-driven completion.
//
// Options (config.options): port, gid_index, connect=store|cm, poll=busy|event,
// sq_depth, max_inline, slice_min, slice_max, qp_timeout, retry_cnt,
// key_prefix (rendezvous keys; default "rdma/"). $TIDE_RDMA_OPTIONS
// ("poll=event,sq_depth=16") adds options the config does not set.
//
// Ordering: a batch is cut, per peer, into groups at every switch between
// reads and writes and before the last slice of each WRITE_WITH_IMM. A group
// is posted only after the previous group to that peer has completed, so
// read-after-write and write-after-read hold across QPs and devices (RC
// orders one QP only, and IBV_SEND_FENCE orders reads within one QP only),
// and a notification arrives only after all data before it is in place.
//
// Access checks: a request is refused at submit, before anything reaches the
// NIC, unless its descriptor matches what the target published when it
// registered the region (key, base, rkeys; bounds from the published size) and
// the region is still registered (region_registry.h has the trust model).
// A remote access error on a checked region means the target's registration
// vanished: kNotFound if it deregistered, kUnavailable if it exited.

#include <memory>
#include <vector>

#include "engine/transport/registry.h"
#include "engine/transport/transport.h"

namespace tide::transport::rdma {

struct RdmaStats {
  double lastRegistrationSeconds = 0;   // ibv_reg_mr on every device, last region
  double totalRegistrationSeconds = 0;  // all regions so far
  uint64_t registeredBytes = 0;         // currently registered
  uint64_t regionsRegistered = 0;       // since creation
  uint64_t workRequestsPosted = 0;
  uint64_t slicesRetried = 0;  // failed slices moved to another QP or device
  uint64_t queuePairs = 0;
  int devices = 0;
  std::vector<uint64_t> bytesPerDevice;  // posted bytes per rail (striping)
};

// Creates the transport and connects RC QPs to every peer (config.store, or
// RDMA CM with options["connect"]="cm"). Empty config.devices means the
// devices in $TIDE_RDMA_DEVICES (comma separated), else the first device.
Result<std::unique_ptr<Transport>> createRdmaTransport(const TransportConfig& config);

// Counters of an rdma transport (nullptr-safe: returns zeros for others).
RdmaStats rdmaStats(const Transport* transport);

}  // namespace tide::transport::rdma
