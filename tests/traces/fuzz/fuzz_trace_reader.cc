// libFuzzer target for traces::readTrace: the input is a program of edits
// (delete / rewrite attributes, delete / poke / reshape datasets) applied
// through the HDF5 API to a valid trace, which tide then reads. Any result
// must be a Status, never a crash or a hang in tide's code.
//
// Why edits and not raw bytes: libhdf5 itself (Debian's 1.10.8) overflows
// heap buffers and loops on corrupt object headers and global heaps (raw-
// byte fuzzing found both within seconds, inside H5Aexists and H5HG_read),
// which no caller can guard against. Byte-level damage a caller can detect
// (truncation, garbage, a wrong file) is covered by corrupt_trace_test;
// this target covers what tide's reader owns: schema, shapes, types, ranges.
#include <hdf5.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "traces/generator.h"
#include "traces/trace_file.h"

namespace {

const char* const kGroups[] = {"/", "/meta", "/routing", "/delta", "/rollout"};
const char* const kAttrs[] = {"schema",
                              "schema_version",
                              "model",
                              "scale",
                              "steps",
                              "seed",
                              "total_params",
                              "train_layout",
                              "infer_layout",
                              "generator",
                              "exact",
                              "lr",
                              "eps",
                              "weight_decay",
                              "grad_std",
                              "grad_signal",
                              "tokens_per_step",
                              "routing_zipf",
                              "routing_jitter",
                              "first_moe_layer",
                              "samples_per_step",
                              "sample_per_tensor",
                              "skip_no_grad"};
const char* const kDatasets[] = {
    "/meta/tensor_name",      "/meta/tensor_numel",       "/meta/tensor_kind",
    "/meta/tensor_layer",     "/meta/tensor_expert",      "/meta/kind_names",
    "/routing/counts",        "/delta/changed",           "/delta/checked",
    "/delta/ever_changed",    "/delta/index_offsets",     "/delta/indices",
    "/rollout/prompt_tokens", "/rollout/response_tokens", "/rollout/start_s",
    "/rollout/end_s"};
template <typename T, size_t N>
constexpr size_t count(const T (&)[N]) {
  return N;
}

std::string basePath, workPath;
std::string baseBytes;

class Reader {
 public:
  Reader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool more() const { return i_ < n_; }
  uint8_t byte() { return i_ < n_ ? d_[i_++] : 0; }
  double value() {
    switch (byte() % 8) {
      case 0:
        return std::numeric_limits<double>::quiet_NaN();
      case 1:
        return std::numeric_limits<double>::infinity();
      case 2:
        return -1;
      case 3:
        return 0;
      case 4:
        return 1e30;
      case 5:
        return static_cast<double>(std::numeric_limits<int64_t>::max());
      default: {
        int64_t v = 0;
        for (int k = 0; k < 4; ++k) v = (v << 8) | byte();
        return static_cast<double>(v - (1ll << 31));
      }
    }
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t i_ = 0;
};

void setAttr(hid_t file, const char* group, const char* name, double v, bool asString) {
  hid_t g = H5Oopen(file, group, H5P_DEFAULT);
  if (g < 0) return;
  H5Adelete(g, name);
  hid_t space = H5Screate(H5S_SCALAR);
  if (asString) {
    hid_t t = H5Tcopy(H5T_C_S1);
    const std::string s = std::to_string(v);
    H5Tset_size(t, s.size());
    hid_t a = H5Acreate2(g, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, t, s.data()), H5Aclose(a);
    H5Tclose(t);
  } else {
    const bool integral = std::isfinite(v) && std::fabs(v) < 9.2e18 &&
                          v == static_cast<double>(static_cast<int64_t>(v));
    hid_t t = integral ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
    const int64_t iv = integral ? static_cast<int64_t>(v) : 0;
    hid_t a = H5Acreate2(g, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, t, integral ? static_cast<const void*>(&iv) : &v), H5Aclose(a);
  }
  H5Sclose(space);
  H5Oclose(g);
}

// Sets one element of a numeric dataset (read and written as double).
void poke(hid_t file, const char* path, uint64_t index, double v) {
  hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  if (ds < 0) return;
  hid_t t = H5Dget_type(ds);
  hid_t space = H5Dget_space(ds);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  const H5T_class_t cls = H5Tget_class(t);
  if (n > 0 && n <= (1 << 20) && (cls == H5T_INTEGER || cls == H5T_FLOAT)) {
    std::vector<double> all(static_cast<size_t>(n));
    if (H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0) {
      all[index % all.size()] = v;
      H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data());
    }
  }
  H5Sclose(space);
  H5Tclose(t);
  H5Dclose(ds);
}

// Replaces a dataset with a small int64 or double one of another shape.
void reshape(hid_t file, const char* path, Reader& in) {
  H5Ldelete(file, path, H5P_DEFAULT);
  const int rank = 1 + in.byte() % 3;
  std::array<hsize_t, 3> dims{};
  hsize_t n = 1;
  for (int d = 0; d < rank; ++d) n *= (dims[d] = in.byte() % 9);
  const bool real = in.byte() & 1;
  std::vector<double> data(n);
  for (auto& x : data) x = in.value();
  hid_t space = H5Screate_simple(rank, dims.data(), nullptr);
  hid_t t = real ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
  hid_t ds = H5Dcreate2(file, path, t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (ds >= 0) {
    if (n > 0) H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
    H5Dclose(ds);
  }
  H5Sclose(space);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const std::string dir = "/tmp/tide_fuzz_trace_" + std::to_string(::getpid());
  basePath = dir + "_base.h5";
  workPath = dir + "_work.h5";
  tide::traces::GenerateOptions o;
  o.model = "tiny-moe";
  o.steps = 2;
  o.threads = 1;
  o.rollout.samplesPerStep = 4;
  auto t = tide::traces::generateTrace(o);
  if (!t.isOk() || !tide::traces::writeTrace(basePath, *t).isOk()) {
    std::fprintf(stderr, "fuzz_trace_reader: cannot write the base trace\n");
    std::abort();
  }
  std::ifstream f(basePath, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  baseBytes = ss.str();
  std::remove(basePath.c_str());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(workPath, std::ios::binary | std::ios::trunc);
    out.write(baseBytes.data(), static_cast<std::streamsize>(baseBytes.size()));
  }
  hid_t file = H5Fopen(workPath.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) std::abort();  // the base trace must open
  Reader in(data, size);
  for (int edits = 0; in.more() && edits < 16; ++edits) {
    const uint8_t op = in.byte();
    const char* group = kGroups[in.byte() % count(kGroups)];
    const char* attr = kAttrs[in.byte() % count(kAttrs)];
    const char* ds = kDatasets[in.byte() % count(kDatasets)];
    switch (op % 6) {
      case 0: {
        hid_t g = H5Oopen(file, group, H5P_DEFAULT);
        if (g >= 0) H5Adelete(g, attr), H5Oclose(g);
        break;
      }
      case 1:
        setAttr(file, group, attr, in.value(), false);
        break;
      case 2:
        setAttr(file, group, attr, in.value(), true);
        break;
      case 3:
        H5Ldelete(file, ds, H5P_DEFAULT);
        break;
      case 4: {
        uint64_t idx = 0;
        for (int k = 0; k < 3; ++k) idx = (idx << 8) | in.byte();
        poke(file, ds, idx, in.value());
        break;
      }
      default:
        reshape(file, ds, in);
        break;
    }
  }
  H5Fclose(file);
  auto r = tide::traces::readTrace(workPath);
  if (r.isOk()) (void)tide::traces::describeTrace(*r);
  return 0;
}
