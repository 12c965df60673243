#pragma once
// Appends transfer events to the /events group of a trace file while a run
// goes: buffered, flushed every `flushEvery` events and on flush(), so a
// reader sees a consistent prefix after each flush. No HDF5 in this header.

#include <memory>
#include <string>

#include "traces/event.h"

namespace tide::traces {

class EventWriter final : public EventSink {
 public:
  // Opens an existing trace file and appends to its /events, or creates a new
  // file holding only /events (plus the schema attributes) when absent.
  static Result<std::unique_ptr<EventWriter>> open(const std::string& path,
                                                   size_t flushEvery = 4096);
  ~EventWriter() override;  // flushes; errors are kept for the caller of flush()

  Status append(const Event& e) override;
  Status flush() override;
  uint64_t written() const;

 private:
  struct Impl;
  explicit EventWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tide::traces
