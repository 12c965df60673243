#pragma once
// The rendezvous store's server: a key-value map served over TCP. Every
// connection must first present the run token; a wrong token is refused and
// closed, so ranks of another run (or a stray client) never read or write this
// run's keys. One thread per connection: ranks are few and GETs block. The
// wire format and its decoding are in store_protocol.h.

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
#include "engine/exec/rendezvous/store_protocol.h"

namespace tide::exec {

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
  void erase(const std::string& key);
  size_t size();  // keys held
  // Drops every key that starts with `prefix` (a long-lived run's finished
  // rounds); returns how many.
  size_t erasePrefix(const std::string& prefix);
  // Connections being served (closed ones are reaped at the next accept).
  size_t connections();

 private:
  struct Conn {
    UniqueFd fd;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  explicit StoreServer(std::string token) : token_(std::move(token)) {}
  void acceptLoop();
  void serve(Conn& conn);
  void reapLocked();
  bool handshake(int fd, const StoreReader& read);

  std::string token_;
  int port_ = 0;
  UniqueFd listen_;
  UniqueFd wake_;
  std::thread acceptor_;
  std::atomic<bool> stop_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
  // Under mu_. A list: a Conn's address stays valid for its thread.
  std::list<Conn> conns_;
};

}  // namespace tide::exec
