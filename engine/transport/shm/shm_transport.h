#pragma once
// Shared-memory backend: ranks (threads or processes of one user) on one host.
//
// One-sided requests are plain copies into the target's registered memory:
// memcpy when the target lives in the same process, process_vm_writev /
// process_vm_readv on the target's pid otherwise. Before every copy the
// initiator pins the region in the target's shared region table (a memfd each
// rank publishes through the store) and checks id, key and bounds, so a
// request never touches memory the target did not register for it. Control
// messages and peer liveness go over unix-domain sockets. See shm_segment.h
// for the trust model.
//
// Options (TransportConfig::options):
//   copy = auto | process_vm   process_vm forces the syscall path even for
//                              ranks in the same process (tests use it).

#include <memory>

#include "engine/transport/registry.h"
#include "engine/transport/transport.h"

namespace tide::transport::shm {

Result<std::unique_ptr<Transport>> createShmTransport(const TransportConfig& config);

}  // namespace tide::transport::shm
