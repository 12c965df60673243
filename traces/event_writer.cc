#include "traces/event_writer.h"

#include <unistd.h>

#include <mutex>
#include <vector>

#include "traces/events_io.h"
#include "traces/hdf5_util.h"

namespace tide::traces {

struct EventWriter::Impl {
  h5::Handle file;
  std::vector<Event> pending;
  size_t flushEvery = 4096;
  uint64_t written = 0;
  Status firstError;
  std::mutex mu;

  Status flushLocked() {
    if (!firstError.isOk()) return firstError;
    std::lock_guard<std::recursive_mutex> lib(h5::libraryMutex());
    Status s = detail::appendEvents(file.get(), pending);
    if (s.isOk() && H5Fflush(file.get(), H5F_SCOPE_LOCAL) < 0) {
      s = TIDE_ERROR(Code::kDataLoss, "cannot flush trace file");
    }
    if (!s.isOk()) {
      firstError = s;
      return s;
    }
    written += pending.size();
    pending.clear();
    return Status::ok();
  }
};

EventWriter::EventWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EventWriter::~EventWriter() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->pending.empty()) (void)impl_->flushLocked();
  std::lock_guard<std::recursive_mutex> lib(h5::libraryMutex());
  impl_->file.reset();
}

Result<std::unique_ptr<EventWriter>> EventWriter::open(const std::string& path, size_t flushEvery) {
  std::lock_guard<std::recursive_mutex> lib(h5::libraryMutex());
  auto impl = std::make_unique<Impl>();
  impl->flushEvery = flushEvery == 0 ? 1 : flushEvery;
  if (::access(path.c_str(), F_OK) == 0) {
    TIDE_ASSIGN_OR_RETURN(impl->file, h5::openFile(path, true));
    TIDE_RETURN_IF_ERROR(detail::checkSchema(impl->file.get(), path));
    if (!h5::exists(impl->file.get(), "events")) {
      TIDE_RETURN_IF_ERROR(detail::createEventsGroup(impl->file.get()));
    }
  } else {
    TIDE_ASSIGN_OR_RETURN(impl->file, h5::createFile(path));
    TIDE_RETURN_IF_ERROR(detail::writeSchemaAttrs(impl->file.get()));
    TIDE_RETURN_IF_ERROR(detail::createEventsGroup(impl->file.get()));
  }
  return std::unique_ptr<EventWriter>(new EventWriter(std::move(impl)));
}

Status EventWriter::append(const Event& e) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->firstError.isOk()) return impl_->firstError;
  impl_->pending.push_back(e);
  if (impl_->pending.size() >= impl_->flushEvery) return impl_->flushLocked();
  return Status::ok();
}

Status EventWriter::flush() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->flushLocked();
}

uint64_t EventWriter::written() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->written;
}

}  // namespace tide::traces
