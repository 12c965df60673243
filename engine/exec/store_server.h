#pragma once
// The rendezvous store's server: a key-value map served over TCP. Every
// connection must first present the run token; a wrong token is refused and
// closed, so ranks of another run (or a stray client) never read or write this
// run's keys. One thread per connection: ranks are few and GETs block.
//
// Wire format (little-endian, this host's layout):
//   hello:   u32 magic, u32 token length, token   -> u8 accepted
//   set:     u8 1, u32 klen, key, u32 vlen, value -> u8 status
//   get:     u8 2, u32 klen, key, f64 timeout     -> u8 status, u32 vlen, value
//   add:     u8 3, u32 klen, key, i64 delta       -> u8 status, i64 value
// status: 0 ok, 1 timeout, 2 bad request.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide::exec {

inline constexpr uint32_t kStoreMagic = 0x74535431;  // "tST1"
inline constexpr uint32_t kMaxStoreKey = 64 * 1024;
inline constexpr uint32_t kMaxStoreValue = 256u << 20;
enum class StoreOp : uint8_t { kSet = 1, kGet = 2, kAdd = 3 };
enum class StoreReply : uint8_t { kOk = 0, kTimeout = 1, kBad = 2 };

class StoreServer {
 public:
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // Listens on host:port (0 picks a free port) and serves until destroyed.
  static Result<std::unique_ptr<StoreServer>> start(const std::string& host, int port,
                                                    std::string token);
  int port() const { return port_; }

  // Direct access for the hosting process.
  void set(const std::string& key, std::string value);
  // Empty optional-like: returns false on timeout or shutdown.
  bool get(const std::string& key, double timeoutSeconds, std::string& out);
  int64_t add(const std::string& key, int64_t delta, bool& ok);

 private:
  explicit StoreServer(std::string token) : token_(std::move(token)) {}
  void acceptLoop();
  void serve(int fd);
  bool handshake(int fd);

  std::string token_;
  int port_ = 0;
  UniqueFd listen_;
  UniqueFd wake_;
  std::thread acceptor_;
  std::atomic<bool> stop_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
  std::list<std::pair<UniqueFd, std::thread>> conns_;  // under mu_
};

}  // namespace tide::exec
