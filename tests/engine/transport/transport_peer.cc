// A rank in its own process for the conformance tests' peer-death cases:
//   transport_peer STORE_DIR BACKEND RANK WORLD REGION_BYTES
// It connects, registers one region, publishes its descriptor under
// "desc/<rank>", prints "ready" and then idles until killed (or 120 s pass,
// so an orphan never lingers).

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "engine/transport/registry.h"
#include "tests/engine/transport/file_store.h"

int main(int argc, char** argv) {
  using namespace tide;
  if (argc != 6) {
    std::fprintf(stderr, "usage: transport_peer STORE_DIR BACKEND RANK WORLD REGION_BYTES\n");
    return 2;
  }
  transport::testing::FileStore store(argv[1]);
  transport::TransportConfig c;
  c.backend = argv[2];
  c.rank = std::atoi(argv[3]);
  c.worldSize = std::atoi(argv[4]);
  c.store = &store;
  c.connectTimeoutSeconds = 20;
  auto t = transport::createTransport(c);
  if (!t.isOk()) {
    std::fprintf(stderr, "transport_peer: %s\n", t.status().toString().c_str());
    return 1;
  }
  std::vector<char> region(std::strtoull(argv[5], nullptr, 10));
  auto r = (*t)->registerRegion(region.data(), region.size());
  if (!r.isOk() || !store.set("desc/" + std::to_string(c.rank), r->descriptor.serialize()).isOk()) {
    std::fprintf(stderr, "transport_peer: cannot register or publish its region\n");
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}
