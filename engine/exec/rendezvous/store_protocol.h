#pragma once
// The rendezvous store's wire format and its decoding, apart from sockets so
// that the server and a fuzzer run the same checks on a client's bytes.
//
// Wire format (little-endian, this host's layout):
//   hello:   u32 magic, u32 token length, token   -> u8 accepted
//   set:     u8 1, u32 klen, key, u32 vlen, value -> u8 status
//   get:     u8 2, u32 klen, key, f64 timeout     -> u8 status, u32 vlen, value
//   add:     u8 3, u32 klen, key, i64 delta       -> u8 status, i64 value
//   erase:   u8 4, u32 klen, key                  -> u8 status
// status: 0 ok, 1 timeout, 2 bad request.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "engine/core/status.h"

namespace tide::exec {

inline constexpr uint32_t kStoreMagic = 0x74535431;  // "tST1"
inline constexpr uint32_t kMaxStoreToken = 4096;
inline constexpr uint32_t kMaxStoreKey = 64 * 1024;
inline constexpr uint32_t kMaxStoreValue = 256u << 20;
enum class StoreOp : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kErase = 4 };
enum class StoreReply : uint8_t { kOk = 0, kTimeout = 1, kBad = 2 };

struct StoreRequest {
  StoreOp op = StoreOp::kGet;
  std::string key;
  std::string value;          // kSet
  double timeoutSeconds = 0;  // kGet, as sent (the server clamps it)
  int64_t delta = 0;          // kAdd
};

// Fills exactly n bytes; false once the connection ended or failed.
using StoreReader = std::function<bool(void* data, size_t n)>;

// A client's hello against the run token: kUnavailable when the bytes ended,
// kInvalidArgument when it is not a tide store client, kPermissionDenied
// for a wrong token.
Status readStoreHello(const StoreReader& read, const std::string& token);
// One request: kUnavailable when the bytes ended, kInvalidArgument for an
// unknown op or a key or value over its limit.
Result<StoreRequest> readStoreRequest(const StoreReader& read);

}  // namespace tide::exec
