// libFuzzer target: traces::readTrace on arbitrary bytes (written to a temp
// file, since HDF5 reads files). Any input must give a Status, never a crash
// in tide's code.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "traces/trace_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/tide_fuzz_trace_" + std::to_string(::getpid()) + ".h5";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  auto r = tide::traces::readTrace(path);
  if (r.isOk()) (void)tide::traces::describeTrace(*r);
  std::remove(path.c_str());
  return 0;
}
