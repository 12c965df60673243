#include "traces/results_file.h"

#include <mutex>

#include "traces/events_io.h"
#include "traces/hdf5_util.h"

namespace tide::traces {

namespace {

Status writeRun(hid_t runs, const ResultRun& r) {
  TIDE_ASSIGN_OR_RETURN(h5::Handle g, h5::createGroup(runs, r.name));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "title", r.title));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "status", r.status));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "reason", r.reason));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "command", r.command));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "seconds", r.seconds));
  // Output and documents can exceed the 64 KiB attribute limit: datasets.
  TIDE_RETURN_IF_ERROR(h5::writeStrings(g.get(), "output_tail", {r.outputTail}));
  TIDE_ASSIGN_OR_RETURN(h5::Handle docs, h5::createGroup(g.get(), "documents"));
  for (const auto& [name, text] : r.documents) {
    TIDE_RETURN_IF_ERROR(h5::writeStrings(docs.get(), name, {text}));
  }
  if (r.eventFiles.empty()) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(h5::Handle evs, h5::createGroup(g.get(), "events"));
  for (const auto& [label, path] : r.eventFiles) {
    TIDE_ASSIGN_OR_RETURN(h5::Handle src, h5::openFile(path, false));
    TIDE_ASSIGN_OR_RETURN(std::vector<Event> events, detail::readEvents(src.get()));
    TIDE_ASSIGN_OR_RETURN(h5::Handle lg, h5::createGroup(evs.get(), label));
    // createEventsGroup makes "<loc>/events": rows land in events/<label>/events.
    TIDE_RETURN_IF_ERROR(detail::createEventsGroup(lg.get()));
    TIDE_RETURN_IF_ERROR(detail::appendEvents(lg.get(), events));
  }
  return Status::ok();
}

}  // namespace

Status writeResultsFile(const std::string& path, const ResultsDoc& doc) {
  std::lock_guard<std::recursive_mutex> lock(h5::libraryMutex());
  h5::silenceErrors();
  TIDE_ASSIGN_OR_RETURN(h5::Handle f, h5::createFile(path));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(f.get(), "schema", std::string("tide.results")));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(f.get(), "version", int64_t{1}));
  TIDE_ASSIGN_OR_RETURN(h5::Handle env, h5::createGroup(f.get(), "environment"));
  for (const auto& [k, v] : doc.environment) {
    TIDE_RETURN_IF_ERROR(h5::writeAttr(env.get(), k, v));
  }
  TIDE_ASSIGN_OR_RETURN(h5::Handle runs, h5::createGroup(f.get(), "runs"));
  for (const auto& r : doc.runs) {
    Status s = writeRun(runs.get(), r);
    if (!s.isOk())
      return TIDE_ERROR(s.code(), "results " + path + ", run " + r.name + ": " + s.message());
  }
  return Status::ok();
}

}  // namespace tide::traces
