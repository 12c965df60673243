// libFuzzer target for the batch manifest decoder. Each input is decoded three
// ways: as is; with its trailing checksum fixed (so the structural checks
// behind the checksum are reached); and XOR-ed over a valid manifest with the
// checksum fixed (deep mutations of real field tables). A manifest that
// decodes must re-encode to bytes that decode again to the same fields.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/data/manifest.h"

using tide::data::Manifest;

namespace {

std::string withChecksum(std::string s) {
  if (s.size() < 8) return s;
  uint64_t c = tide::data::checksum(s.data(), s.size() - 8);
  std::memcpy(s.data() + s.size() - 8, &c, 8);
  return s;
}

std::string templateManifest() {
  Manifest m;
  m.id = "fuzz";
  m.rows = 3;
  m.regions.push_back(tide::transport::RemoteRegion{1, 2, 4096, 0, 5, {}});
  tide::data::FieldManifest f;
  f.name = "tokens";
  f.kind = tide::data::ColumnKind::kRagged;
  f.dtype = tide::data::DType::kI32;
  f.valueCount = 4;
  f.data = {0, 0, 16, 0};
  f.offsets = {0, 64, 32, 0};
  m.fields.push_back(f);
  tide::data::FieldManifest d;
  d.name = "reward";
  d.dtype = tide::data::DType::kF32;
  d.dims = {3, 2};
  d.data = {0, 128, 24, 0};
  m.fields.push_back(d);
  return m.encode();
}

void check(const std::string& bytes) {
  auto r = Manifest::decode(bytes);
  if (!r.isOk()) return;
  auto again = Manifest::decode(r->encode());
  if (!again.isOk() || again->fields.size() != r->fields.size() || again->rows != r->rows)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  check(in);
  check(withChecksum(in));
  static const std::string base = templateManifest();
  std::string mutated = base;
  for (size_t i = 0; i < size; ++i) mutated[i % (base.size() - 8)] ^= in[i];
  if (size > base.size()) mutated.resize(size % (2 * base.size()) + 8);
  check(withChecksum(mutated));
  return 0;
}
