#include "engine/transport/shm/shm_control.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/parse.h"
#include "engine/core/socket_io.h"

namespace tide::transport::shm {
namespace {

constexpr uint32_t kMaxMessage = 1u << 30;

struct Hello {
  int32_t rank;
  uint64_t nonce;
};

struct Header {
  uint32_t tag;
  uint32_t length;
};

sockaddr_un abstractAddress(const std::string& name, socklen_t& len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  // Abstract namespace (leading NUL): nothing on disk to clean up after a crash.
  std::memcpy(a.sun_path + 1, name.data(), std::min(name.size(), sizeof a.sun_path - 2));
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                               std::min(name.size(), sizeof a.sun_path - 2));
  return a;
}

}  // namespace

std::string encodeControlAddress(const ControlAddress& a) {
  return a.name + "\n" + std::to_string(a.nonce);
}

Result<ControlAddress> decodeControlAddress(std::string_view text) {
  const size_t nl = text.find('\n');
  if (nl == std::string_view::npos || nl == 0)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "malformed shm control address (expected a name, a newline, a nonce)");
  ControlAddress a;
  a.name = std::string(text.substr(0, nl));
  TIDE_ASSIGN_OR_RETURN(a.nonce, parseUnsigned(text.substr(nl + 1), "shm control nonce"));
  return a;
}

ControlChannel::ControlChannel(int rank, int worldSize, double opTimeoutSeconds)
    : rank_(rank),
      worldSize_(worldSize),
      opTimeout_(opTimeoutSeconds),
      out_(worldSize),
      mailbox_(worldSize) {
  for (int i = 0; i < worldSize; ++i) outMu_.push_back(std::make_unique<std::mutex>());
}

ControlChannel::~ControlChannel() {
  stop_ = true;
  if (wake_.valid()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
  }
  if (receiver_.joinable()) receiver_.join();
  mailbox_.closeAll(TIDE_ERROR(Code::kUnavailable, "shm transport closed"));
}

Result<std::unique_ptr<ControlChannel>> ControlChannel::create(int rank, int worldSize,
                                                               Store& store,
                                                               double connectTimeoutSeconds,
                                                               double opTimeoutSeconds) {
  std::unique_ptr<ControlChannel> c(new ControlChannel(rank, worldSize, opTimeoutSeconds));
  std::random_device rd;
  c->nonce_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::string name = "tide-shm-" + std::to_string(::getpid()) + "-" + std::to_string(c->nonce_);

  c->listen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!c->listen_.valid()) return TIDE_ERRNO("socket(AF_UNIX)");
  socklen_t alen = 0;
  sockaddr_un addr = abstractAddress(name, alen);
  if (::bind(c->listen_.get(), reinterpret_cast<sockaddr*>(&addr), alen) != 0)
    return TIDE_ERRNO("bind control socket");
  if (::listen(c->listen_.get(), 1024) != 0) return TIDE_ERRNO("listen control socket");
  c->wake_.reset(::eventfd(0, EFD_CLOEXEC));
  if (!c->wake_.valid()) return TIDE_ERRNO("eventfd");

  std::string key = "shm/" + std::to_string(rank) + "/ctl";
  TIDE_RETURN_IF_ERROR(store.set(key, encodeControlAddress({name, c->nonce_})));
  c->receiver_ = std::thread([raw = c.get()] { raw->receiveLoop(); });

  for (int p = 0; p < worldSize; ++p) {
    if (p == rank) continue;
    auto v = store.get("shm/" + std::to_string(p) + "/ctl", connectTimeoutSeconds);
    if (!v.isOk()) return v.status().withContext("shm: waiting for rank " + std::to_string(p));
    auto peerAddr = decodeControlAddress(*v);
    if (!peerAddr.isOk())
      return peerAddr.status().withContext("shm: control address of rank " + std::to_string(p));
    const std::string& peerName = peerAddr->name;
    Hello hello{rank, peerAddr->nonce};
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return TIDE_ERRNO("socket(AF_UNIX)");
    sockaddr_un pa = abstractAddress(peerName, alen);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&pa), alen) != 0)
      return TIDE_ERRNO("shm: connect to rank " + std::to_string(p));
    setIoTimeout(fd.get(), opTimeoutSeconds);
    TIDE_RETURN_IF_ERROR(sendAll(fd.get(), &hello, sizeof hello)
                             .withContext("shm: hello to rank " + std::to_string(p)));
    c->out_[p] = std::move(fd);
  }
  return c;
}

void ControlChannel::markGone(int peer, const std::string& why) {
  mailbox_.close(peer, TIDE_ERROR(Code::kUnavailable, why));
}

bool ControlChannel::peerGone(int peer) const {
  return mailbox_.closed(peer);
}

bool ControlChannel::readMessage(int fd, int peer) {
  Header h{};
  if (!recvExact(fd, &h, sizeof h).isOk()) return false;
  if (h.length > kMaxMessage) return false;
  std::vector<uint8_t> body(h.length);
  if (h.length > 0 && !recvExact(fd, body.data(), body.size()).isOk()) return false;
  mailbox_.put(peer, h.tag, std::move(body));
  return true;
}

void ControlChannel::receiveLoop() {
  // fds_[i] pairs with peers[i]; -1 means the hello has not been read yet.
  std::vector<UniqueFd> conns;
  std::vector<int> peers;
  while (!stop_) {
    std::vector<pollfd> pfds;
    pfds.push_back({wake_.get(), POLLIN, 0});
    pfds.push_back({listen_.get(), POLLIN, 0});
    for (auto& c : conns) pfds.push_back({c.get(), POLLIN, 0});
    int n = ::poll(pfds.data(), pfds.size(), 500);
    if (n < 0 && errno != EINTR) break;
    if (stop_) break;
    // Only the connections that were polled have a pollfd; one accepted
    // below is appended after them and polled next round.
    const size_t polled = pfds.size() - 2;
    if (pfds[1].revents & POLLIN) {
      UniqueFd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (fd.valid()) {
        setIoTimeout(fd.get(), opTimeout_);
        conns.push_back(std::move(fd));
        peers.push_back(-1);
      }
    }
    for (size_t i = polled; i-- > 0;) {
      if (pfds[i + 2].revents == 0) continue;
      int fd = conns[i].get();
      bool ok = true;
      if (peers[i] < 0) {
        Hello h{};
        ok = recvExact(fd, &h, sizeof h).isOk() && h.rank >= 0 && h.rank < worldSize_ &&
             h.rank != rank_ && h.nonce == nonce_;
        if (ok) peers[i] = h.rank;
        if (!ok) {  // a stranger or a broken hello: drop the connection only
          conns.erase(conns.begin() + static_cast<long>(i));
          peers.erase(peers.begin() + static_cast<long>(i));
          continue;
        }
      } else {
        ok = readMessage(fd, peers[i]);
        if (!ok) {
          markGone(peers[i], "rank " + std::to_string(peers[i]) +
                                 " closed its shm transport or its process exited");
          conns.erase(conns.begin() + static_cast<long>(i));
          peers.erase(peers.begin() + static_cast<long>(i));
        }
      }
    }
  }
}

Status ControlChannel::send(int peer, uint32_t tag, std::span<const uint8_t> bytes) {
  if (peer < 0 || peer >= worldSize_)
    return TIDE_ERROR(
        Code::kInvalidArgument,
        "send to rank " + std::to_string(peer) + " outside world of " + std::to_string(worldSize_));
  if (bytes.size() > kMaxMessage)
    return TIDE_ERROR(Code::kInvalidArgument, "control message over 1 GiB");
  if (peer == rank_) {
    mailbox_.put(peer, tag, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    return Status::ok();
  }
  Header h{tag, static_cast<uint32_t>(bytes.size())};
  std::lock_guard<std::mutex> lock(*outMu_[peer]);
  int fd = out_[peer].get();
  Status st = sendAll(fd, &h, sizeof h);
  if (st.isOk() && !bytes.empty()) st = sendAll(fd, bytes.data(), bytes.size());
  if (!st.isOk())
    return TIDE_ERROR(Code::kUnavailable, "shm: send to rank " + std::to_string(peer) +
                                              " failed: " + st.message() +
                                              " (peer gone or not reading)");
  return Status::ok();
}

Result<std::vector<uint8_t>> ControlChannel::recv(int peer, uint32_t tag, double timeoutSeconds) {
  if (peer < 0 || peer >= worldSize_)
    return TIDE_ERROR(Code::kInvalidArgument, "recv from rank " + std::to_string(peer) +
                                                  " outside world of " +
                                                  std::to_string(worldSize_));
  return mailbox_.take(peer, tag, timeoutSeconds);
}

}  // namespace tide::transport::shm
