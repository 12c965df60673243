#include "engine/transport/tcp/tcp_wire.h"

#include <cinttypes>
#include <cstdio>

#include "engine/core/parse.h"

namespace tide::transport::tcp {
namespace {

Status wireError(const std::string& what) {
  return TIDE_ERROR(Code::kDataLoss, what);
}

}  // namespace

Status checkRequestHeader(const WireHeader& h) {
  if (h.magic != kWireMagic) return wireError("bad magic");
  switch (static_cast<MsgType>(h.type)) {
    case MsgType::kWrite:
    case MsgType::kReadReq:
      return Status::ok();
    case MsgType::kControl:
      if (h.length > kMaxControlBytes) return wireError("oversized control message");
      return Status::ok();
    default:
      return wireError("unexpected message type " + std::to_string(h.type));
  }
}

Result<AnswerKind> checkAnswerHeader(const WireHeader& h, const PendingRequest* oldest) {
  if (h.magic != kWireMagic) return wireError("bad magic");
  if (oldest == nullptr) return wireError("answer without a request");
  if (h.seq != oldest->seq) return wireError("answer out of order");
  const auto type = static_cast<MsgType>(h.type);
  if (type == MsgType::kAck && !oldest->read) return AnswerKind::kWriteAck;
  if (type == MsgType::kReadResp && oldest->read) {
    if (h.length != oldest->length) return wireError("read answer of the wrong length");
    return AnswerKind::kReadData;
  }
  if (type == MsgType::kNack) {
    if (h.length > kMaxControlBytes) return wireError("oversized NACK");
    return AnswerKind::kNack;
  }
  return wireError("unexpected answer type " + std::to_string(h.type));
}

Code nackCode(uint8_t code) {
  if (code == static_cast<uint8_t>(Code::kOk) || code > static_cast<uint8_t>(Code::kInternal))
    return Code::kInternal;
  return static_cast<Code>(code);
}

Status checkHello(const Hello& h, uint64_t token, int self, int worldSize, int streams) {
  if (h.magic != kWireMagic || h.version != kWireVersion)
    return TIDE_ERROR(Code::kInvalidArgument, "not a tide tcp peer (bad magic or version)");
  if (h.token != token) return TIDE_ERROR(Code::kPermissionDenied, "wrong run token");
  if (h.worldSize != worldSize || h.target != self || h.rank < 0 || h.rank >= worldSize ||
      h.rank == self || h.stream < 0 || h.stream >= streams)
    return TIDE_ERROR(Code::kInvalidArgument, "hello from rank " + std::to_string(h.rank) +
                                                  " stream " + std::to_string(h.stream) +
                                                  " does not fit this world");
  return Status::ok();
}

Status checkHelloReply(const HelloReply& r, uint64_t token, int peer) {
  if (r.magic != kWireMagic || r.rank != peer || r.token != token)
    return TIDE_ERROR(Code::kInvalidArgument, "answered with a wrong identity");
  return Status::ok();
}

std::string formatRunToken(uint64_t token) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, token);
  return buf;
}

Result<uint64_t> parseRunToken(std::string_view text) {
  // Exactly what formatRunToken writes: a token of another form is not ours.
  if (text.size() != 16 || text.find_first_not_of("0123456789abcdef") != std::string_view::npos)
    return TIDE_ERROR(Code::kInvalidArgument, "malformed run token in rendezvous store");
  return parseUnsigned(text, "run token", 16);
}

Result<HostPort> splitHostPort(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "address '" + std::string(text) + "' is not host:port");
  auto port = parseUnsigned(text.substr(colon + 1), "port", 10, 65535);
  if (!port.isOk() || *port == 0)
    return TIDE_ERROR(Code::kInvalidArgument, "bad port in address '" + std::string(text) + "'");
  return HostPort{std::string(text.substr(0, colon)), static_cast<uint16_t>(*port)};
}

}  // namespace tide::transport::tcp
