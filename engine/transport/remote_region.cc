#include <cstring>

#include "engine/transport/transport.h"

namespace tide::transport {
namespace {

constexpr uint32_t kMagic = 0x74524731;  // "tRG1"

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
bool take(const std::string& in, size_t& pos, T& v) {
  if (in.size() - pos < sizeof v) return false;
  std::memcpy(&v, in.data() + pos, sizeof v);
  pos += sizeof v;
  return true;
}

}  // namespace

std::string RemoteRegion::serialize() const {
  std::string out;
  put(out, kMagic);
  put(out, rank);
  put(out, id);
  put(out, size);
  put(out, base);
  put(out, key);
  put(out, static_cast<uint32_t>(rkeys.size()));
  for (uint32_t k : rkeys) put(out, k);
  return out;
}

Result<RemoteRegion> RemoteRegion::deserialize(const std::string& bytes) {
  RemoteRegion r;
  size_t pos = 0;
  uint32_t magic = 0, n = 0;
  bool ok = take(bytes, pos, magic) && magic == kMagic && take(bytes, pos, r.rank) &&
            take(bytes, pos, r.id) && take(bytes, pos, r.size) && take(bytes, pos, r.base) &&
            take(bytes, pos, r.key) && take(bytes, pos, n) && n <= 64;
  if (ok) {
    r.rkeys.resize(n);
    for (uint32_t i = 0; i < n && ok; ++i) ok = take(bytes, pos, r.rkeys[i]);
  }
  if (!ok || pos != bytes.size())
    return TIDE_ERROR(Code::kInvalidArgument,
                      "malformed region descriptor (" + std::to_string(bytes.size()) + " bytes)");
  return r;
}

}  // namespace tide::transport
