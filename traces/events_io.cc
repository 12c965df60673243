#include "traces/events_io.h"

#include <cmath>

#include "traces/hdf5_util.h"
#include "traces/trace.h"

namespace tide::traces::detail {

Status writeSchemaAttrs(hid_t file) {
  TIDE_RETURN_IF_ERROR(h5::writeAttr(file, "schema", std::string(kSchemaName)));
  return h5::writeAttr(file, "schema_version", kSchemaVersion);
}

Status checkSchema(hid_t file, const std::string& path) {
  auto name = h5::readStringAttr(file, "schema");
  if (!name.isOk() || *name != kSchemaName) {
    return TIDE_ERROR(Code::kInvalidArgument, "'" + path + "' is not a tide trace (no schema='" +
                                                  kSchemaName + "' attribute)");
  }
  auto ver = h5::readIntAttr(file, "schema_version");
  if (!ver.isOk()) return ver.status().withContext(path);
  if (*ver < kOldestSchemaVersion || *ver > kSchemaVersion) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "'" + path + "' has trace schema version " + std::to_string(*ver) +
                          "; this tide reads versions " + std::to_string(kOldestSchemaVersion) +
                          " to " + std::to_string(kSchemaVersion));
  }
  return Status::ok();
}

Status createEventsGroup(hid_t file) {
  TIDE_ASSIGN_OR_RETURN(h5::Handle g, h5::createGroup(file, "events"));
  std::string names;
  for (int p = 0; p < kEventPathCount; ++p) {
    names += (p ? "," : "") + std::string(pathName(static_cast<EventPath>(p)));
  }
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "path_names", names));
  TIDE_RETURN_IF_ERROR(h5::writeAttr(g.get(), "time_unit", std::string("s")));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<double>(g.get(), "t_start", {0}, {}, true));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<double>(g.get(), "t_end", {0}, {}, true));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<int32_t>(g.get(), "src", {0}, {}, true));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<int32_t>(g.get(), "dst", {0}, {}, true));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<uint64_t>(g.get(), "bytes", {0}, {}, true));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<int32_t>(g.get(), "stage", {0}, {}, true));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<int32_t>(g.get(), "step", {0}, {}, true));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<int32_t>(g.get(), "unit", {0}, {}, true));
  TIDE_RETURN_IF_ERROR(h5::writeDataset<uint32_t>(g.get(), "piece", {0}, {}, true));
  return h5::writeDataset<uint8_t>(g.get(), "path", {0}, {}, true);
}

Status appendEvents(hid_t file, const std::vector<Event>& ev) {
  if (ev.empty()) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(h5::Handle g, h5::openGroup(file, "events"));
  const size_t n = ev.size();
  std::vector<double> ts(n), te(n);
  std::vector<int32_t> src(n), dst(n), stage(n), step(n), unit(n);
  std::vector<uint32_t> piece(n);
  std::vector<uint64_t> bytes(n);
  std::vector<uint8_t> path(n);
  for (size_t i = 0; i < n; ++i) {
    ts[i] = ev[i].tStart;
    te[i] = ev[i].tEnd;
    src[i] = ev[i].src;
    dst[i] = ev[i].dst;
    bytes[i] = ev[i].bytes;
    stage[i] = ev[i].stage;
    step[i] = ev[i].step;
    path[i] = static_cast<uint8_t>(ev[i].path);
    unit[i] = ev[i].unit;
    piece[i] = ev[i].piece;
  }
  // A version 2 file (appended to) has no unit columns.
  if (h5::exists(g.get(), "unit")) {
    TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "unit", unit));
    TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "piece", piece));
  }
  TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "t_start", ts));
  TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "t_end", te));
  TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "src", src));
  TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "dst", dst));
  TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "bytes", bytes));
  TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "stage", stage));
  TIDE_RETURN_IF_ERROR(h5::appendRows(g.get(), "step", step));
  return h5::appendRows(g.get(), "path", path);
}

Result<std::vector<Event>> readEvents(hid_t file) {
  TIDE_ASSIGN_OR_RETURN(h5::Handle g, h5::openGroup(file, "events"));
  TIDE_ASSIGN_OR_RETURN(h5::DatasetInfo info, h5::datasetInfo(g.get(), "t_start"));
  if (info.shape.size() != 1) {
    return TIDE_ERROR(Code::kDataLoss, "/events/t_start must be 1-D");
  }
  const std::vector<uint64_t> shape = info.shape;
  TIDE_ASSIGN_OR_RETURN(auto ts, h5::readDataset<double>(g.get(), "t_start", shape));
  TIDE_ASSIGN_OR_RETURN(auto te, h5::readDataset<double>(g.get(), "t_end", shape));
  TIDE_ASSIGN_OR_RETURN(auto src, h5::readDataset<int32_t>(g.get(), "src", shape));
  TIDE_ASSIGN_OR_RETURN(auto dst, h5::readDataset<int32_t>(g.get(), "dst", shape));
  TIDE_ASSIGN_OR_RETURN(auto bytes, h5::readDataset<uint64_t>(g.get(), "bytes", shape));
  TIDE_ASSIGN_OR_RETURN(auto stage, h5::readDataset<int32_t>(g.get(), "stage", shape));
  TIDE_ASSIGN_OR_RETURN(auto step, h5::readDataset<int32_t>(g.get(), "step", shape));
  TIDE_ASSIGN_OR_RETURN(auto path, h5::readDataset<uint8_t>(g.get(), "path", shape));
  std::vector<int32_t> unit(shape[0], -1);
  std::vector<uint32_t> piece(shape[0], 0);
  if (h5::exists(g.get(), "unit")) {  // version 3
    TIDE_ASSIGN_OR_RETURN(unit, h5::readDataset<int32_t>(g.get(), "unit", shape));
    TIDE_ASSIGN_OR_RETURN(piece, h5::readDataset<uint32_t>(g.get(), "piece", shape));
  }
  std::vector<Event> ev(shape[0]);
  for (size_t i = 0; i < ev.size(); ++i) {
    if (!std::isfinite(ts[i]) || !std::isfinite(te[i]) || te[i] < ts[i]) {
      return TIDE_ERROR(Code::kDataLoss, "/events row " + std::to_string(i) +
                                             ": times must be finite with t_end >= t_start");
    }
    if (path[i] >= kEventPathCount) {
      return TIDE_ERROR(Code::kDataLoss, "/events row " + std::to_string(i) +
                                             ": unknown path code " + std::to_string(path[i]));
    }
    ev[i] = Event{ts[i],    te[i],    src[i],  dst[i],
                  bytes[i], stage[i], step[i], static_cast<EventPath>(path[i]),
                  unit[i],  piece[i]};
  }
  return ev;
}

}  // namespace tide::traces::detail
