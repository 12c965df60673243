#include "harness/sim/host_probes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/fd.h"
#include "engine/core/units.h"
#include "engine/plan/fp8_pass.h"
#include "engine/plan/transfer_plan.h"
#include "harness/sim/conversion_probe.h"

namespace tide::harness {

namespace {

// One tcp stream over 127.0.0.1 between two threads: `bytes` in 1 MiB
// writes, timed from the first write to the last byte read. This is the rate
// of the host that runs every emulated node's ranks, measured now.
Result<double> loopbackOnce(size_t bytes) {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid()) return TIDE_ERRNO("probe socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listener.get(), 1) != 0 ||
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return TIDE_ERRNO("probe listen on 127.0.0.1");
  UniqueFd out(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!out.valid() || ::connect(out.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return TIDE_ERRNO("probe connect to 127.0.0.1");
  UniqueFd in(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!in.valid()) return TIDE_ERRNO("probe accept");
  size_t got = 0;
  std::thread reader([&] {
    std::vector<char> buf(1 << 20);
    while (got < bytes) {
      ssize_t n = ::recv(in.get(), buf.data(), buf.size(), 0);
      if (n <= 0) break;  // the sender's error is the one reported
      got += static_cast<size_t>(n);
    }
  });
  std::vector<char> chunk(1 << 20, 'x');
  Stopwatch sw;
  size_t sent = 0;
  Status st = Status::ok();
  while (sent < bytes) {
    ssize_t n = ::send(out.get(), chunk.data(), std::min(chunk.size(), bytes - sent), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      st = TIDE_ERRNO("probe send");
      break;
    }
    sent += static_cast<size_t>(n);
  }
  out.reset();  // EOF: the reader stops even if the sender failed
  reader.join();
  TIDE_RETURN_IF_ERROR(st);
  if (got != bytes) return TIDE_ERROR(Code::kDataLoss, "probe: short read on 127.0.0.1");
  return static_cast<double>(bytes) / std::max(1e-9, sw.seconds());
}

}  // namespace

Result<double> probeLoopbackTcp() {
  std::vector<double> r;
  for (int i = 0; i < 3; ++i) {
    TIDE_ASSIGN_OR_RETURN(double bps, loopbackOnce(64u << 20));
    r.push_back(bps);
  }
  std::sort(r.begin(), r.end());
  return r[1];
}

Result<double> probeHostConvert() {
  constexpr uint64_t kRows = 4096, kCols = 2048;
  plan::RegionBox box;
  box.ndim = 2;
  box.lo[0] = box.lo[1] = 0;
  box.hi[0] = kRows;
  box.hi[1] = kCols;
  plan::TransferPlan t;
  plan::TensorInfo ti;
  ti.shape = {kRows, kCols};
  ti.fp8Block = 128;
  t.tensors.push_back(ti);
  QuantizeJob job(t, 0, box);
  std::vector<double> r;
  for (int i = 0; i < 3; ++i) {
    Stopwatch sw;
    TIDE_RETURN_IF_ERROR(job.run());
    r.push_back(plan::fp8PassBytes(2.0 * static_cast<double>(job.outBytes()), 0) /
                std::max(1e-9, sw.seconds()));
  }
  std::sort(r.begin(), r.end());
  return r[1];
}

namespace {

Status figure(const std::string& spec, const char* flag, Result<double> (*probe)(), double& bps,
              std::string& source) {
  source = "none";
  if (spec == "none") return Status::ok();
  if (spec == "probe") {
    TIDE_ASSIGN_OR_RETURN(bps, probe());
    source = "probe";
    return Status::ok();
  }
  auto rate = parseRate(spec);
  if (!rate.isOk()) return rate.status().withContext(flag);
  bps = *rate;
  source = "given";
  return Status::ok();
}

}  // namespace

Result<HostFigures> measureHost(const std::string& tcp, const std::string& convert) {
  HostFigures h;
  TIDE_RETURN_IF_ERROR(figure(tcp, "--host-tcp", probeLoopbackTcp, h.tcpBps, h.tcpSource));
  TIDE_RETURN_IF_ERROR(
      figure(convert, "--host-convert", probeHostConvert, h.convertBps, h.convertSource));
  h.cores = hostCores();
  return h;
}

int hostCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    return std::max(1u, std::thread::hardware_concurrency());
  }
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace tide::harness
