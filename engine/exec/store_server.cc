#include "engine/exec/store_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/log.h"
#include "engine/exec/socket_io.h"

namespace tide::exec {
namespace {

constexpr double kHandshakeSeconds = 10;

bool tokensEqual(const std::string& a, const std::string& b) {
  // Length leaks, contents do not: compare every byte.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool readString(int fd, uint32_t limit, std::string& out) {
  uint32_t n = 0;
  if (!recvAll(fd, &n, sizeof n) || n > limit) return false;
  out.resize(n);
  return n == 0 || recvAll(fd, out.data(), n);
}

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
  std::list<std::pair<UniqueFd, std::thread>> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : conns_) ::shutdown(c.first.get(), SHUT_RDWR);
    conns.swap(conns_);
  }
  cv_.notify_all();
  for (auto& c : conns) c.second.join();
}

void StoreServer::acceptLoop() {
  while (!stop_) {
    pollfd p[2] = {{wake_.get(), POLLIN, 0}, {listen_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (stop_) return;
    if (!(p[1].revents & POLLIN)) continue;
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    conns_.emplace_back(UniqueFd(fd), std::thread());
    conns_.back().second = std::thread([this, fd] { serve(fd); });
  }
}

bool StoreServer::handshake(int fd) {
  setIoTimeout(fd, kHandshakeSeconds);  // a silent client cannot pin a thread forever
  uint32_t magic = 0;
  std::string token;
  bool ok = recvAll(fd, &magic, sizeof magic) && magic == kStoreMagic &&
            readString(fd, 4096, token) && tokensEqual(token, token_);
  uint8_t reply = ok ? 1 : 0;
  sendAll(fd, &reply, 1);
  if (!ok)
    TIDE_LOG_WARN("rendezvous store: refused a connection (wrong run token or not a tide client)");
  setIoTimeout(fd, 0);
  return ok;
}

void StoreServer::serve(int fd) {
  if (!handshake(fd)) {
    ::shutdown(fd, SHUT_RDWR);
    return;
  }
  while (!stop_) {
    uint8_t op = 0;
    std::string key;
    if (!recvAll(fd, &op, 1) || !readString(fd, kMaxStoreKey, key)) break;
    if (op == static_cast<uint8_t>(StoreOp::kSet)) {
      std::string value;
      if (!readString(fd, kMaxStoreValue, value)) break;
      set(key, std::move(value));
      uint8_t r = 0;
      if (!sendAll(fd, &r, 1)) break;
    } else if (op == static_cast<uint8_t>(StoreOp::kGet)) {
      double timeout = 0;
      if (!recvAll(fd, &timeout, sizeof timeout)) break;
      std::string value;
      bool found = get(key, timeout, value);
      if (stop_) break;
      uint8_t r = static_cast<uint8_t>(found ? StoreReply::kOk : StoreReply::kTimeout);
      uint32_t n = static_cast<uint32_t>(value.size());
      if (!sendAll(fd, &r, 1) || !sendAll(fd, &n, sizeof n) || !sendAll(fd, value.data(), n)) break;
    } else if (op == static_cast<uint8_t>(StoreOp::kAdd)) {
      int64_t delta = 0;
      if (!recvAll(fd, &delta, sizeof delta)) break;
      bool ok = true;
      int64_t v = add(key, delta, ok);
      uint8_t r = static_cast<uint8_t>(ok ? StoreReply::kOk : StoreReply::kBad);
      if (!sendAll(fd, &r, 1) || !sendAll(fd, &v, sizeof v)) break;
    } else {
      break;  // protocol violation: drop the connection
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
    ok = true;
    if (it != values_.end()) {
      char* end = nullptr;
      v = std::strtoll(it->second.c_str(), &end, 10);
      if (it->second.empty() || *end != '\0') {
        ok = false;
        return 0;
      }
    }
    v += delta;
    values_[key] = std::to_string(v);
  }
  cv_.notify_all();
  return v;
}

}  // namespace tide::exec
