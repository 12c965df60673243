#pragma once
// /events group I/O (internal to traces/): one extendible 1-D dataset per
// column, so rows can be appended while a run goes.

#include <hdf5.h>

#include <vector>

#include "engine/core/status.h"
#include "traces/event.h"

namespace tide::traces::detail {

Status createEventsGroup(hid_t file);
Status appendEvents(hid_t file, const std::vector<Event>& events);
Result<std::vector<Event>> readEvents(hid_t file);
// Writes the root schema attributes.
Status writeSchemaAttrs(hid_t file);
// Checks the root schema attributes: name and version.
Status checkSchema(hid_t file, const std::string& path);

}  // namespace tide::traces::detail
