#pragma once
// Payload checksums that can be computed in parallel and verified piece by
// piece as READs land. A segment is cut into kChecksumChunk pieces from its
// start; its checksum is xxh3-64 over the little-endian xxh3-64 of each piece.
// The pieces are the same ranges BatchStore reads with one request each, so a
// reader verifies a piece as soon as its request completes, overlapped with
// the transfer of the rest, and a writer hashes the pieces on several threads.

#include <cstdint>
#include <span>

namespace tide::data {

inline constexpr uint64_t kChecksumChunk = 8ull << 20;

// One piece to hash: `length` bytes at `data`, result to `*out`.
struct HashJob {
  const uint8_t* data = nullptr;
  uint64_t length = 0;
  uint64_t* out = nullptr;
};

// Which build of xxh3 hashes the pieces on this host (same values either way).
const char* hashImplementation();
// Threads hashJobs() uses by default: a few, but never more than the host has.
unsigned checksumThreads();
// Hashes every job (xxh3-64 of its bytes), spreading them over `threads`
// threads (the caller is one of them).
void hashJobs(std::span<const HashJob> jobs, unsigned threads);
// The segment checksum from its pieces' hashes, in order.
uint64_t combinePieceHashes(std::span<const uint64_t> pieces);
// Number of pieces of a segment of `length` bytes (0 for an empty segment).
inline uint64_t pieceCount(uint64_t length) {
  return (length + kChecksumChunk - 1) / kChecksumChunk;
}
// The segment checksum of [data, data+length), hashed on `threads` threads.
uint64_t payloadChecksum(const void* data, uint64_t length, unsigned threads = 1);

}  // namespace tide::data
