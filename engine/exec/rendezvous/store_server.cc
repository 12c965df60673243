#include "engine/exec/rendezvous/store_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/kv_store.h"
#include "engine/core/log.h"
#include "engine/core/socket_io.h"

namespace tide::exec {
namespace {

constexpr double kHandshakeSeconds = 10;

}  // namespace

Result<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& host, int port,
                                                        std::string token) {
  std::unique_ptr<StoreServer> s(new StoreServer(std::move(token)));
  TIDE_ASSIGN_OR_RETURN(s->listen_, listenTcp(host, port, 1024));
  s->port_ = boundPort(s->listen_.get());
  s->wake_.reset(::eventfd(0, EFD_CLOEXEC));
  if (!s->wake_.valid()) return TIDE_ERRNO("eventfd");
  s->acceptor_ = std::thread([raw = s.get()] { raw->acceptLoop(); });
  return s;
}

StoreServer::~StoreServer() {
  stop_ = true;
  uint64_t one = 1;
  if (wake_.valid()) [[maybe_unused]]
    ssize_t n = ::write(wake_.get(), &one, sizeof one);
  if (acceptor_.joinable()) acceptor_.join();
  std::list<Conn> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : conns_) ::shutdown(c.fd.get(), SHUT_RDWR);
    conns.swap(conns_);
  }
  cv_.notify_all();
  for (auto& c : conns) c.thread.join();
}

void StoreServer::acceptLoop() {
  while (!stop_) {
    pollfd p[2] = {{wake_.get(), POLLIN, 0}, {listen_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (stop_) return;
    if (!(p[1].revents & POLLIN)) continue;
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // A reply is several small sends (status, length, value): with Nagle
    // the second waits for the ACK of the first, which the client delays
    // (~40 ms) as it has nothing to send meanwhile; every get paid that.
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    // Clients that left (a rank that exited or was killed) would otherwise
    // keep their socket and thread here until the server goes: a run that
    // restarts ranks would grow by both.
    reapLocked();
    Conn& c = conns_.emplace_back();
    c.fd.reset(fd);
    c.thread = std::thread([this, &c] { serve(c); });
  }
}

void StoreServer::reapLocked() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (!it->done.load()) {
      ++it;
      continue;
    }
    it->thread.join();  // it has returned or is returning from serve()
    it = conns_.erase(it);
  }
}

size_t StoreServer::connections() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& c : conns_) n += c.done.load() ? 0 : 1;
  return n;
}

size_t StoreServer::erasePrefix(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (auto it = values_.lower_bound(prefix);
       it != values_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    it = values_.erase(it);
    ++n;
  }
  return n;
}

bool StoreServer::handshake(int fd, const StoreReader& read) {
  setIoTimeout(fd, kHandshakeSeconds);  // a silent client cannot pin a thread forever
  Status s = readStoreHello(read, token_);
  uint8_t reply = s.isOk() ? 1 : 0;
  (void)sendAll(fd, &reply, 1);  // a client that went has nothing to read it
  if (!s.isOk())
    TIDE_LOG_WARN("rendezvous store: refused a connection ({}; another run or not a tide client)",
                  s.message());
  setIoTimeout(fd, 0);
  return s.isOk();
}

void StoreServer::serve(Conn& conn) {
  const int fd = conn.fd.get();
  struct MarkDone {
    std::atomic<bool>& done;
    ~MarkDone() { done = true; }
  } markDone{conn.done};
  const StoreReader read = [fd](void* data, size_t n) { return recvExact(fd, data, n).isOk(); };
  if (!handshake(fd, read)) {
    ::shutdown(fd, SHUT_RDWR);
    return;
  }
  while (!stop_) {
    auto req = readStoreRequest(read);
    if (!req.isOk()) break;  // closed, or a protocol violation: drop the connection
    if (req->op == StoreOp::kSet) {
      set(req->key, std::move(req->value));
      uint8_t r = 0;
      if (!sendAll(fd, &r, 1).isOk()) break;
    } else if (req->op == StoreOp::kGet) {
      std::string value;
      bool found = get(req->key, req->timeoutSeconds, value);
      if (stop_) break;
      uint8_t r = static_cast<uint8_t>(found ? StoreReply::kOk : StoreReply::kTimeout);
      uint32_t n = static_cast<uint32_t>(value.size());
      if (!sendAll(fd, &r, 1).isOk() || !sendAll(fd, &n, sizeof n).isOk() ||
          !sendAll(fd, value.data(), n).isOk())
        break;
    } else if (req->op == StoreOp::kErase) {
      erase(req->key);
      uint8_t r = 0;
      if (!sendAll(fd, &r, 1).isOk()) break;
    } else {
      bool ok = true;
      int64_t v = add(req->key, req->delta, ok);
      uint8_t r = static_cast<uint8_t>(ok ? StoreReply::kOk : StoreReply::kBad);
      if (!sendAll(fd, &r, 1).isOk() || !sendAll(fd, &v, sizeof v).isOk()) break;
    }
  }
  ::shutdown(fd, SHUT_RDWR);
}

void StoreServer::set(const std::string& key, std::string value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = std::move(value);
  }
  cv_.notify_all();
}

void StoreServer::erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  values_.erase(key);
}

size_t StoreServer::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return values_.size();
}

bool StoreServer::get(const std::string& key, double timeoutSeconds, std::string& out) {
  if (!(timeoutSeconds >= 0)) timeoutSeconds = 0;
  Deadline deadline = Deadline::after(std::min(timeoutSeconds, 1e7));
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    auto it = values_.find(key);
    if (it != values_.end()) {
      out = it->second;
      return true;
    }
    if (stop_ || deadline.expired()) return false;
    cv_.wait_until(lock, deadline.when());
  }
}

int64_t StoreServer::add(const std::string& key, int64_t delta, bool& ok) {
  int64_t v = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = values_.find(key);
    auto sum = addToCounter(it != values_.end() ? &it->second : nullptr, delta);
    ok = sum.isOk();
    if (!ok) return 0;
    v = *sum;
    values_[key] = std::to_string(v);
  }
  cv_.notify_all();
  return v;
}

}  // namespace tide::exec
