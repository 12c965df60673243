#pragma once
// The tcp backend's wire format. Every message is one fixed header, maybe
// followed by a payload. Per ordered rank pair (initiator -> target) there are
// `streams` connections; on each, the initiator sends requests and the target
// answers every WRITE and READ in order, so responses match requests FIFO.
// The checks of what a peer sent are pure functions here (tcp_wire.cc): the
// streams, the rendezvous and the fuzzer run the same ones.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace tide::transport::tcp {

inline constexpr uint32_t kWireMagic = 0x54494445;  // "TIDE"
inline constexpr uint32_t kWireVersion = 1;
// Largest payload of a control message or NACK text a peer may send.
inline constexpr uint64_t kMaxControlBytes = 64ull << 20;

enum class MsgType : uint8_t {
  kWrite = 1,     // payload = data for [offset, +length) of region
  kReadReq = 2,   // target answers kReadResp with `length` bytes, or kNack
  kReadResp = 3,  // payload = data
  kAck = 4,       // a kWrite was placed
  kNack = 5,      // payload = reason text; `code` = tide::Code
  kControl = 6,   // two-sided message; `imm` = tag, payload = bytes; no answer
};

inline constexpr uint16_t kFlagImm = 1;  // kWrite: deliver `imm` once placed

struct WireHeader {
  uint32_t magic = kWireMagic;
  uint8_t type = 0;
  uint8_t code = 0;
  uint16_t flags = 0;
  uint32_t region = 0;
  uint32_t imm = 0;  // immediate value, or tag for kControl
  uint64_t offset = 0;
  uint64_t length = 0;  // payload bytes (kReadReq: bytes requested)
  uint64_t key = 0;
  uint64_t seq = 0;  // per-connection request number, echoed by responses
};
static_assert(sizeof(WireHeader) == 48, "wire header layout");

// First bytes on a new connection, from the connecting (initiator) rank.
struct Hello {
  uint32_t magic = kWireMagic;
  uint32_t version = kWireVersion;
  uint64_t token = 0;  // per-run token from the rendezvous store
  int32_t rank = -1;
  int32_t stream = -1;
  int32_t worldSize = 0;
  int32_t target = -1;  // rank the initiator believes it reached
};
static_assert(sizeof(Hello) == 32, "hello layout");

// The accepting rank's answer: its rank, echoing the token.
struct HelloReply {
  uint32_t magic = kWireMagic;
  int32_t rank = -1;
  uint64_t token = 0;
};
static_assert(sizeof(HelloReply) == 16, "hello reply layout");

// A request header at the target: kDataLoss naming what is wrong (bad magic,
// a type that is not a request, an oversized control message). Region, range
// and key are checked against the region table, not here.
Status checkRequestHeader(const WireHeader& h);

// The oldest request in flight on a connection, which the next answer answers.
struct PendingRequest {
  uint64_t seq = 0;
  bool read = false;    // a READ (else a WRITE)
  uint64_t length = 0;  // bytes a READ asked for
};
enum class AnswerKind { kWriteAck, kReadData, kNack };
// An answer header at the initiator (`oldest` null: nothing in flight):
// what follows it, or kDataLoss naming what is wrong.
Result<AnswerKind> checkAnswerHeader(const WireHeader& h, const PendingRequest* oldest);
// A NACK's code as a tide::Code; kInternal for OK or a code this side does not know.
Code nackCode(uint8_t code);

// An initiator's hello at the acceptor, rank `self` of `worldSize` with
// `streams` connections per pair: kInvalidArgument when it is not a tide peer
// or does not fit this world, kPermissionDenied for a wrong run token.
Status checkHello(const Hello& h, uint64_t token, int self, int worldSize, int streams);
// The acceptor's reply at the initiator that dialled rank `peer`.
Status checkHelloReply(const HelloReply& r, uint64_t token, int peer);

// The run token as rank 0 publishes it in the store: 16 lowercase hex digits.
std::string formatRunToken(uint64_t token);
Result<uint64_t> parseRunToken(std::string_view text);

// "host:port" as ranks publish their listeners (port 1..65535).
struct HostPort {
  std::string host;
  uint16_t port = 0;
};
Result<HostPort> splitHostPort(std::string_view text);

}  // namespace tide::transport::tcp
