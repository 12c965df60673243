#include "harness/transport_bench/register_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/core/clock.h"
#include "engine/core/kv_store.h"
#include "engine/core/units.h"
#include "engine/transport/registration.h"
#include "engine/transport/registry.h"
#include "harness/transport_bench/transport_bench.h"

namespace tide::harness {

Result<nlohmann::json> runRegisterBench(const RegisterBenchOptions& o) {
  if (o.sizes.empty()) return TIDE_ERROR(Code::kInvalidArgument, "--sizes: give at least one size");
  if (o.repetitions < 1) return TIDE_ERROR(Code::kInvalidArgument, "--repetitions must be >= 1");
  for (uint64_t s : o.sizes)
    if (s == 0) return TIDE_ERROR(Code::kInvalidArgument, "--sizes: a region of 0 bytes");
  const std::string why = transport::whyCannotRunHere(o.backend);
  if (!why.empty()) return TIDE_ERROR(Code::kUnavailable, "bench register: " + why);
  MemoryStore store;
  transport::TransportConfig c;
  c.backend = o.backend;
  c.store = &store;
  c.devices = o.devices;
  TIDE_ASSIGN_OR_RETURN(auto t, transport::createTransport(c));
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  nlohmann::json rows = nlohmann::json::array();
  for (uint64_t size : o.sizes) {
    std::vector<double> reg, dereg;
    for (int i = 0; i < o.repetitions; ++i) {
      // As the executor's set-up: value-initialized, so every page is touched.
      auto buf = std::make_unique<uint8_t[]>(size);
      const double t0 = nowSeconds();
      TIDE_ASSIGN_OR_RETURN(auto region, transport::Registration::borrow(*t, buf.get(), size));
      const double t1 = nowSeconds();
      TIDE_RETURN_IF_ERROR(region.release());
      dereg.push_back(nowSeconds() - t1);
      reg.push_back(t1 - t0);
    }
    const uint64_t pages = (size + page - 1) / page;
    const Percentiles r = percentiles(reg), d = percentiles(dereg);
    rows.push_back(
        {{"bytes", size},
         {"pages", pages},
         {"register_seconds", r.median},
         {"register_seconds_p5", r.p5},
         {"register_seconds_p95", r.p95},
         {"deregister_seconds", d.median},
         {"register_seconds_per_page", r.median / static_cast<double>(pages)},
         {"register_gbps", r.median > 0 ? static_cast<double>(size) / r.median / 1e9 : 0}});
    std::printf(
        "register  %-10s %9llu pages: %.6f s (p5 %.6f, p95 %.6f), %.3f us/page; "
        "deregister %.6f s\n",
        formatBytes(size).c_str(), static_cast<unsigned long long>(pages), r.median, r.p5, r.p95,
        r.median / static_cast<double>(pages) * 1e6, d.median);
  }
  return nlohmann::json{{"schema", "tide.bench.register/1"},
                        {"backend", o.backend},
                        {"devices", o.devices},
                        {"page_bytes", page},
                        {"repetitions", o.repetitions},
                        {"sizes", std::move(rows)}};
}

}  // namespace tide::harness
