#include "engine/exec/rendezvous/store_protocol.h"

#include <algorithm>

namespace tide::exec {
namespace {

Status ended() {
  return TIDE_ERROR(Code::kUnavailable, "store client closed the connection");
}

bool tokensEqual(const std::string& a, const std::string& b) {
  // Length leaks, contents do not: compare every byte.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// A length-prefixed string of at most `limit` bytes. The buffer grows with
// the bytes that arrived, so a length alone does not allocate its limit.
Status readString(const StoreReader& read, uint32_t limit, const char* what, std::string& out) {
  uint32_t n = 0;
  if (!read(&n, sizeof n)) return ended();
  if (n > limit)
    return TIDE_ERROR(Code::kInvalidArgument, std::string("store ") + what + " of " +
                                                  std::to_string(n) + " bytes (limit " +
                                                  std::to_string(limit) + ")");
  constexpr size_t kChunk = 64 * 1024;
  out.clear();
  while (out.size() < n) {
    const size_t at = out.size();
    out.resize(at + std::min<size_t>(kChunk, n - at));
    if (!read(out.data() + at, out.size() - at)) return ended();
  }
  return Status::ok();
}

}  // namespace

Status readStoreHello(const StoreReader& read, const std::string& token) {
  uint32_t magic = 0;
  if (!read(&magic, sizeof magic)) return ended();
  if (magic != kStoreMagic)
    return TIDE_ERROR(Code::kInvalidArgument, "not a tide store client (bad magic)");
  std::string got;
  Status s = readString(read, kMaxStoreToken, "run token", got);
  if (!s.isOk()) return s;
  if (!tokensEqual(got, token)) return TIDE_ERROR(Code::kPermissionDenied, "wrong run token");
  return Status::ok();
}

Result<StoreRequest> readStoreRequest(const StoreReader& read) {
  StoreRequest r;
  uint8_t op = 0;
  if (!read(&op, 1)) return ended();
  TIDE_RETURN_IF_ERROR(readString(read, kMaxStoreKey, "key", r.key));
  switch (static_cast<StoreOp>(op)) {
    case StoreOp::kSet:
      TIDE_RETURN_IF_ERROR(readString(read, kMaxStoreValue, "value", r.value));
      break;
    case StoreOp::kGet:
      if (!read(&r.timeoutSeconds, sizeof r.timeoutSeconds)) return ended();
      break;
    case StoreOp::kAdd:
      if (!read(&r.delta, sizeof r.delta)) return ended();
      break;
    case StoreOp::kErase:
      break;
    default:
      return TIDE_ERROR(Code::kInvalidArgument, "unknown store op " + std::to_string(op));
  }
  r.op = static_cast<StoreOp>(op);
  return r;
}

}  // namespace tide::exec
