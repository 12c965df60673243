// The importing side of gpu_device_test's IPC case: opens the handle given
// as argv[1] ("<hex>:<size>"), copies the exporter's buffer out and prints
// its XXH3-64 in decimal. Exit 1 with the reason on stderr on any error.

#include <cuda_runtime_api.h>
#include <xxhash.h>

#include <cstdio>
#include <vector>

#include "engine/gpu/cuda_status.h"
#include "engine/gpu/ipc.h"

int main(int argc, char** argv) {
  using namespace tide::gpu;
  if (argc != 2) {
    std::fprintf(stderr, "usage: gpu_ipc_peer <handle>\n");
    return 2;
  }
  auto h = IpcHandle::fromText(argv[1]);
  if (!h.isOk()) {
    std::fprintf(stderr, "%s\n", h.status().toString().c_str());
    return 1;
  }
  auto m = IpcMapping::open(*h);
  if (!m.isOk()) {
    std::fprintf(stderr, "%s\n", m.status().toString().c_str());
    return 1;
  }
  std::vector<unsigned char> v(m->size());
  const tide::Status s =
      cudaCheck(cudaMemcpy(v.data(), m->data(), v.size(), cudaMemcpyDeviceToHost), "D2H");
  if (!s.isOk()) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 1;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(XXH3_64bits(v.data(), v.size())));
  return 0;
}
