#pragma once
// tide::Store over TCP, for ranks that are processes (possibly on several
// hosts). One process hosts the server (host()); the others connect(). Every
// connection presents the per-run token. Clients keep a small pool of
// connections so that a blocking get() in one thread never stalls set() in
// another.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/fd.h"
#include "engine/core/kv_store.h"
#include "engine/exec/rendezvous/store_server.h"

namespace tide::exec {

class TcpStore final : public Store {
 public:
  ~TcpStore() override;

  // Serves the store on host:port (port 0: a free port, see port()).
  static Result<std::unique_ptr<TcpStore>> host(const std::string& host, int port,
                                                std::string token);
  // Connects to a store, retrying until timeout while the server starts.
  static Result<std::unique_ptr<TcpStore>> connect(const std::string& host, int port,
                                                   std::string token, double connectTimeoutSeconds);

  int port() const { return port_; }
  // The hosted server (nullptr in a process that connected): its owner may
  // drop finished keys and count connections.
  StoreServer* hostedServer() const { return server_.get(); }

  Status set(const std::string& key, const std::string& value) override;
  Result<std::string> get(const std::string& key, double timeoutSeconds) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;
  Status erase(const std::string& key) override;

  // Seconds a client waits for a reply beyond the operation's own timeout.
  static constexpr double kReplySlackSeconds = 30;

 private:
  TcpStore(std::string host, int port, std::string token, double connectTimeout)
      : host_(std::move(host)),
        port_(port),
        token_(std::move(token)),
        connectTimeout_(connectTimeout) {}
  Result<UniqueFd> borrow();
  void giveBack(UniqueFd fd);
  // kUnavailable for an exchange that failed with `why`.
  Status lost(const std::string& op, const std::string& key, const Status& why) const;

  std::string host_;
  int port_;
  std::string token_;
  double connectTimeout_;
  std::unique_ptr<StoreServer> server_;  // set when this process hosts the store
  std::mutex poolMu_;
  std::vector<UniqueFd> idle_;
};

}  // namespace tide::exec
