// libFuzzer target for the tcp backend's checks of what a peer sends
// (engine/transport/tcp/tcp_wire.h): request and answer headers, the hello and
// its reply, the run token and the host:port a rank publishes. The first byte
// picks the check, the rest is its input. A check that accepts must have
// accepted only what the format allows; none may throw or crash.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/transport/tcp/tcp_wire.h"

using namespace tide::transport::tcp;

namespace {

// Takes sizeof(T) bytes (zeros past the end of the input).
template <typename T>
T take(const uint8_t*& p, size_t& n) {
  T v{};
  const size_t k = n < sizeof v ? n : sizeof v;
  std::memcpy(&v, p, k);
  p += k;
  n -= k;
  return v;
}

void require(bool ok) {
  if (!ok) std::abort();
}

void requestHeader(const uint8_t* p, size_t n) {
  const auto h = take<WireHeader>(p, n);
  tide::Status s = checkRequestHeader(h);
  if (!s.isOk()) {
    require(s.code() == tide::Code::kDataLoss);
    return;
  }
  const auto t = static_cast<MsgType>(h.type);
  require(h.magic == kWireMagic);
  require(t == MsgType::kWrite || t == MsgType::kReadReq || t == MsgType::kControl);
  require(t != MsgType::kControl || h.length <= kMaxControlBytes);
}

void answerHeader(const uint8_t* p, size_t n) {
  const auto h = take<WireHeader>(p, n);
  const auto flags = take<uint8_t>(p, n);
  PendingRequest pending;
  pending.seq = take<uint64_t>(p, n);
  pending.read = (flags & 1) != 0;
  pending.length = take<uint64_t>(p, n);
  const bool none = (flags & 2) != 0;
  auto kind = checkAnswerHeader(h, none ? nullptr : &pending);
  const tide::Code code = nackCode(h.code);
  require(code != tide::Code::kOk && code <= tide::Code::kInternal);
  if (!kind.isOk()) {
    require(kind.status().code() == tide::Code::kDataLoss);
    return;
  }
  require(!none && h.magic == kWireMagic && h.seq == pending.seq);
  switch (*kind) {
    case AnswerKind::kWriteAck:
      require(!pending.read && h.type == static_cast<uint8_t>(MsgType::kAck));
      break;
    case AnswerKind::kReadData:
      require(pending.read && h.length == pending.length);
      break;
    case AnswerKind::kNack:
      require(h.type == static_cast<uint8_t>(MsgType::kNack) && h.length <= kMaxControlBytes);
      break;
  }
}

void hello(const uint8_t* p, size_t n) {
  const auto h = take<Hello>(p, n);
  const auto token = take<uint64_t>(p, n);
  const int world = 1 + take<uint8_t>(p, n) % 64;
  const int self = take<uint8_t>(p, n) % world;
  const int streams = 1 + take<uint8_t>(p, n) % 64;
  tide::Status s = checkHello(h, token, self, world, streams);
  if (!s.isOk()) {
    require(s.code() == tide::Code::kInvalidArgument || s.code() == tide::Code::kPermissionDenied);
    return;
  }
  require(h.magic == kWireMagic && h.version == kWireVersion && h.token == token);
  require(h.worldSize == world && h.target == self && h.rank >= 0 && h.rank < world &&
          h.rank != self && h.stream >= 0 && h.stream < streams);
}

void helloReply(const uint8_t* p, size_t n) {
  const auto r = take<HelloReply>(p, n);
  const auto token = take<uint64_t>(p, n);
  const auto peer = take<int32_t>(p, n);
  if (checkHelloReply(r, token, peer).isOk())
    require(r.magic == kWireMagic && r.rank == peer && r.token == token);
}

void runToken(std::string_view text) {
  auto t = parseRunToken(text);
  if (t.isOk()) require(formatRunToken(*t) == text);
}

void hostPort(std::string_view text) {
  auto a = splitHostPort(text);
  if (!a.isOk()) return;
  const size_t colon = text.rfind(':');
  require(a->port > 0 && colon != std::string_view::npos && a->host == text.substr(0, colon));
  const std::string_view digits = text.substr(colon + 1);
  require(!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0];
  ++data;
  --size;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  switch (which % 6) {
    case 0:
      requestHeader(data, size);
      break;
    case 1:
      answerHeader(data, size);
      break;
    case 2:
      hello(data, size);
      break;
    case 3:
      helloReply(data, size);
      break;
    case 4:
      runToken(text);
      break;
    default:
      hostPort(text);
      break;
  }
  return 0;
}
