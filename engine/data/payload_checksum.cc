#include "engine/data/payload_checksum.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#ifdef TIDE_XXH3_AVX2
#include "engine/data/xxh3_avx2.h"
#endif

namespace tide::data {

namespace {

using HashFn = uint64_t (*)(const void*, size_t);

HashFn pieceHash() {
#ifdef TIDE_XXH3_AVX2
  if (__builtin_cpu_supports("avx2")) return xxh3Avx2;
#endif
  return XXH3_64bits;
}

}  // namespace

const char* hashImplementation() {
  return pieceHash() == XXH3_64bits ? "xxh3 (libxxhash)" : "xxh3 (avx2)";
}

unsigned checksumThreads() {
  static const unsigned n = std::clamp(std::thread::hardware_concurrency(), 2u, 8u);
  return n;
}

void hashJobs(std::span<const HashJob> jobs, unsigned threads) {
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(jobs.size())));
  static const HashFn hash = pieceHash();
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < jobs.size(); i = next.fetch_add(1))
      *jobs[i].out = hash(jobs[i].data, jobs[i].length);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (auto& h : helpers) h.join();
}

uint64_t combinePieceHashes(std::span<const uint64_t> pieces) {
  // Little-endian host (x86-64, aarch64): the array's bytes are the wire bytes.
  return XXH3_64bits(pieces.data(), pieces.size_bytes());
}

uint64_t payloadChecksum(const void* data, uint64_t length, unsigned threads) {
  const auto* p = static_cast<const uint8_t*>(data);
  std::vector<uint64_t> hashes(pieceCount(length));
  std::vector<HashJob> jobs(hashes.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    uint64_t at = i * kChecksumChunk;
    jobs[i] = {p + at, std::min(kChecksumChunk, length - at), &hashes[i]};
  }
  hashJobs(jobs, threads);
  return combinePieceHashes(hashes);
}

}  // namespace tide::data
