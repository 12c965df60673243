#pragma once
// File I/O for the disk-delta strategy: large sequential transfers (io_uring
// with several blocks in flight when built with liburing, else pread/pwrite
// with large blocks), durable publication (write a temporary, fsync, rename,
// fsync the directory) and an optional token-bucket cap on storage bandwidth
// to emulate a slower shared file system.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::sync {

// Caps throughput at `bytesPerSec` with bursts of up to `burstBytes`.
// Shared by every file of one writer/reader; thread-safe.
class TokenBucket {
 public:
  TokenBucket(double bytesPerSec, uint64_t burstBytes);
  // Blocks until `bytes` may pass. Requests larger than the burst pass once
  // the debt they create is paid back, so any size works.
  void acquire(uint64_t bytes);
  double rate() const { return rate_; }

 private:
  std::mutex mu_;
  double rate_;
  double burst_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

struct FileIoOptions {
  uint64_t blockBytes = 8ull << 20;  // one I/O request
  uint32_t depth = 4;                // requests in flight with io_uring
  bool useUring = true;              // ignored when built without liburing
  TokenBucket* cap = nullptr;        // optional bandwidth cap
};

// True when this build has io_uring support.
bool uringAvailable();

// Writes `data` to `path` so that `path` either does not change or holds all
// of `data`: temporary file, fsync, rename, fsync of the directory.
Status writeFileDurable(const std::string& path, std::span<const uint8_t> data,
                        const FileIoOptions& io);

// Reads the whole file. kNotFound when it does not exist.
Result<std::vector<uint8_t>> readWholeFile(const std::string& path, const FileIoOptions& io);

// fsync of a directory, so renames in it survive a crash.
Status syncDirectory(const std::string& dir);

}  // namespace tide::sync
