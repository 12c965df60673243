#include "engine/exec/rendezvous/tcp_store.h"

#include <sys/socket.h>

#include "engine/core/socket_io.h"

namespace tide::exec {
namespace {

constexpr size_t kMaxIdle = 8;

Status sendString(int fd, const std::string& s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  TIDE_RETURN_IF_ERROR(sendAll(fd, &n, sizeof n));
  return sendAll(fd, s.data(), s.size());
}

}  // namespace

TcpStore::~TcpStore() = default;

Result<std::unique_ptr<TcpStore>> TcpStore::host(const std::string& host, int port,
                                                 std::string token) {
  TIDE_ASSIGN_OR_RETURN(auto server, StoreServer::start(host, port, token));
  std::unique_ptr<TcpStore> s(new TcpStore(host, server->port(), std::move(token), 0));
  s->server_ = std::move(server);
  return s;
}

Result<std::unique_ptr<TcpStore>> TcpStore::connect(const std::string& host, int port,
                                                    std::string token,
                                                    double connectTimeoutSeconds) {
  if (token.size() > kMaxStoreToken)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "run token longer than " + std::to_string(kMaxStoreToken) + " bytes");
  std::unique_ptr<TcpStore> s(new TcpStore(host, port, std::move(token), connectTimeoutSeconds));
  // Connect once now so that an unreachable master or a wrong token is
  // reported here, not at the first get().
  TIDE_ASSIGN_OR_RETURN(UniqueFd fd, s->borrow());
  s->giveBack(std::move(fd));
  return s;
}

Result<UniqueFd> TcpStore::borrow() {
  {
    std::lock_guard<std::mutex> lock(poolMu_);
    if (!idle_.empty()) {
      UniqueFd fd = std::move(idle_.back());
      idle_.pop_back();
      return fd;
    }
  }
  const std::string where = host_ + ":" + std::to_string(port_);
  auto fd = connectTcp(host_, port_, Deadline::after(connectTimeout_));
  if (!fd.isOk())
    return TIDE_ERROR(Code::kUnavailable,
                      "rendezvous store (master) unreachable: " + fd.status().message() +
                          "; is rank 0 or the launcher running, and TIDE_MASTER_ADDR/PORT right?");
  setIoTimeout(fd->get(), kReplySlackSeconds);
  uint32_t magic = kStoreMagic;
  uint8_t accepted = 0;
  auto hello = [&]() -> Status {
    TIDE_RETURN_IF_ERROR(sendAll(fd->get(), &magic, sizeof magic));
    TIDE_RETURN_IF_ERROR(sendString(fd->get(), token_));
    return recvExact(fd->get(), &accepted, 1);
  };
  if (Status st = hello(); !st.isOk())
    return TIDE_ERROR(Code::kUnavailable, "rendezvous store at " + where +
                                              " closed the connection during the handshake (" +
                                              st.message() + ")");
  if (accepted != 1)
    return TIDE_ERROR(Code::kPermissionDenied,
                      "rendezvous store at " + where +
                          " refused the run token (a store of another run? check TIDE_RUN_TOKEN)");
  return std::move(fd).value();
}

void TcpStore::giveBack(UniqueFd fd) {
  std::lock_guard<std::mutex> lock(poolMu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(fd));
}

Status TcpStore::lost(const std::string& op, const std::string& key, const Status& why) const {
  return TIDE_ERROR(Code::kUnavailable, "rendezvous store at " + host_ + ":" +
                                            std::to_string(port_) + ": connection lost during " +
                                            op + " '" + key +
                                            "' (master exited?): " + why.message());
}

Status TcpStore::set(const std::string& key, const std::string& value) {
  if (key.size() > kMaxStoreKey || value.size() > kMaxStoreValue)
    return TIDE_ERROR(Code::kInvalidArgument, "store key or value too large for '" + key + "'");
  if (server_) {
    server_->set(key, value);
    return Status::ok();
  }
  TIDE_ASSIGN_OR_RETURN(UniqueFd fd, borrow());
  uint8_t op = static_cast<uint8_t>(StoreOp::kSet), r = 0;
  auto exchange = [&]() -> Status {
    TIDE_RETURN_IF_ERROR(sendAll(fd.get(), &op, 1));
    TIDE_RETURN_IF_ERROR(sendString(fd.get(), key));
    TIDE_RETURN_IF_ERROR(sendString(fd.get(), value));
    return recvExact(fd.get(), &r, 1);
  };
  if (Status st = exchange(); !st.isOk()) return lost("set", key, st);
  giveBack(std::move(fd));
  return Status::ok();
}

Status TcpStore::erase(const std::string& key) {
  if (key.size() > kMaxStoreKey) return TIDE_ERROR(Code::kInvalidArgument, "store key too large");
  if (server_) {
    server_->erase(key);
    return Status::ok();
  }
  TIDE_ASSIGN_OR_RETURN(UniqueFd fd, borrow());
  uint8_t op = static_cast<uint8_t>(StoreOp::kErase), r = 0;
  auto exchange = [&]() -> Status {
    TIDE_RETURN_IF_ERROR(sendAll(fd.get(), &op, 1));
    TIDE_RETURN_IF_ERROR(sendString(fd.get(), key));
    return recvExact(fd.get(), &r, 1);
  };
  if (Status st = exchange(); !st.isOk()) return lost("erase", key, st);
  giveBack(std::move(fd));
  return Status::ok();
}

Result<std::string> TcpStore::get(const std::string& key, double timeoutSeconds) {
  if (key.size() > kMaxStoreKey) return TIDE_ERROR(Code::kInvalidArgument, "store key too large");
  auto timeoutError = [&] {
    return TIDE_ERROR(Code::kTimeout, "store key '" + key + "' did not appear within " +
                                          std::to_string(timeoutSeconds) + " s");
  };
  std::string value;
  if (server_) {
    if (!server_->get(key, timeoutSeconds, value)) return timeoutError();
    return value;
  }
  TIDE_ASSIGN_OR_RETURN(UniqueFd fd, borrow());
  setIoTimeout(fd.get(), std::max(timeoutSeconds, 0.0) + kReplySlackSeconds);
  uint8_t op = static_cast<uint8_t>(StoreOp::kGet), r = 0;
  uint32_t n = 0;
  auto exchange = [&]() -> Status {
    TIDE_RETURN_IF_ERROR(sendAll(fd.get(), &op, 1));
    TIDE_RETURN_IF_ERROR(sendString(fd.get(), key));
    TIDE_RETURN_IF_ERROR(sendAll(fd.get(), &timeoutSeconds, sizeof timeoutSeconds));
    TIDE_RETURN_IF_ERROR(recvExact(fd.get(), &r, 1));
    TIDE_RETURN_IF_ERROR(recvExact(fd.get(), &n, sizeof n));
    if (n > kMaxStoreValue) return TIDE_ERROR(Code::kDataLoss, "reply larger than any value");
    value.resize(n);
    return n > 0 ? recvExact(fd.get(), value.data(), n) : Status::ok();
  };
  if (Status st = exchange(); !st.isOk()) return lost("get", key, st);
  setIoTimeout(fd.get(), kReplySlackSeconds);
  giveBack(std::move(fd));
  if (r != static_cast<uint8_t>(StoreReply::kOk)) return timeoutError();
  return value;
}

Result<int64_t> TcpStore::add(const std::string& key, int64_t delta) {
  if (key.size() > kMaxStoreKey) return TIDE_ERROR(Code::kInvalidArgument, "store key too large");
  int64_t v = 0;
  bool ok = true;
  if (server_) {
    v = server_->add(key, delta, ok);
  } else {
    TIDE_ASSIGN_OR_RETURN(UniqueFd fd, borrow());
    uint8_t op = static_cast<uint8_t>(StoreOp::kAdd), r = 0;
    auto exchange = [&]() -> Status {
      TIDE_RETURN_IF_ERROR(sendAll(fd.get(), &op, 1));
      TIDE_RETURN_IF_ERROR(sendString(fd.get(), key));
      TIDE_RETURN_IF_ERROR(sendAll(fd.get(), &delta, sizeof delta));
      TIDE_RETURN_IF_ERROR(recvExact(fd.get(), &r, 1));
      return recvExact(fd.get(), &v, sizeof v);
    };
    if (Status st = exchange(); !st.isOk()) return lost("add", key, st);
    giveBack(std::move(fd));
    ok = r == static_cast<uint8_t>(StoreReply::kOk);
  }
  if (!ok) return TIDE_ERROR(Code::kInvalidArgument, "store key '" + key + "' is not a counter");
  return v;
}

}  // namespace tide::exec
