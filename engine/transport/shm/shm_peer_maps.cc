#include "engine/transport/shm/shm_peer_maps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "engine/core/errno_status.h"
#include "engine/core/units.h"

namespace tide::transport::shm {

Result<std::shared_ptr<const PeerMapping>> PeerMappings::get(pid_t pid, int peer, uint32_t id,
                                                             const RegionInfo& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find({peer, id});
  if (it != maps_.end()) return it->second;
  const std::string who = "region " + std::to_string(id) + " of rank " + std::to_string(peer);
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(slot.memfd);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT)
      return TIDE_ERROR(Code::kUnavailable, "rank " + std::to_string(peer) + " (pid " +
                                                std::to_string(pid) + ") is gone: " + path);
    return TIDE_ERRNO("open the memfd of " + who + " (" + path + ")");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return TIDE_ERRNO("fstat the memfd of " + who);
  // The slot is pinned, so the owner still holds this fd; the checks catch a
  // registration that lied about its memory, not a race.
  if (static_cast<uint64_t>(st.st_ino) != slot.inode ||
      static_cast<uint64_t>(st.st_size) < slot.fileOffset ||
      static_cast<uint64_t>(st.st_size) - slot.fileOffset < slot.size)
    return TIDE_ERROR(Code::kFailedPrecondition,
                      who + ": its memfd does not hold the registered range (fd " +
                          std::to_string(slot.memfd) + " was replaced or truncated)");
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = slot.fileOffset / page * page;
  const uint64_t length = slot.size + (slot.fileOffset - start);
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(),
                   static_cast<off_t>(start));
  if (p == MAP_FAILED) return TIDE_ERRNO("mmap " + formatBytes(length) + " of " + who);
  auto m = std::make_shared<PeerMapping>();
  m->map = Mapping(p, length);
  m->base = static_cast<char*>(p) + (slot.fileOffset - start);
  m->size = slot.size;
  maps_[{peer, id}] = m;
  return std::shared_ptr<const PeerMapping>(std::move(m));
}

void PeerMappings::sweep(const std::function<bool(int peer, uint32_t id)>& stillValid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (maps_.empty()) return;
  for (auto it = maps_.begin(); it != maps_.end();) {
    if (stillValid(it->first.first, it->first.second))
      ++it;
    else
      it = maps_.erase(it);
  }
}

size_t PeerMappings::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return maps_.size();
}

}  // namespace tide::transport::shm
