#pragma once
// Batch <-> Python. A batch reaches Python as tide.Batch (PyBatch): the C++
// batch and the object its bytes may live in (a Node's pool). Its columns
// come out as numpy arrays over tide's bytes (no copy): a dense column as an
// array of its shape, a ragged one as tide.Ragged (values array + int64 row
// offsets). The one copy on the way out: a ragged slice whose offsets do
// not start at 0 gets rebased offsets (8 bytes a row, never the values).
// A dict goes in as columns over the arrays' own memory (no copy); a list of
// rows (arrays, lists or bytes) is concatenated into a new column (a copy).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "engine/data/batch.h"

namespace tide::python {

// A typed-ragged column as Python holds it. `object`: opaque bytes per row
// (values uint8). `dtype`: tide's dtype when it is not the array's (bf16).
struct Ragged {
  pybind11::array values;
  pybind11::array offsets;  // int64, rows + 1
  bool object = false;
  std::string dtype;
  int64_t rows() const { return offsets.size() > 0 ? int64_t(offsets.size()) - 1 : 0; }
};

struct PyBatch {
  data::Batch batch;
  pybind11::object keep;  // what the bytes' pool belongs to (None: owned by the batch)
  // The batch's leases go back before `keep` (the pool's Node) may go.
  ~PyBatch() { batch = data::Batch(); }
};

// One column from a Python value (array, tide.Ragged, or a list of rows);
// `dtype`: an explicit tide dtype name (bf16 data in an int16 array).
data::Column columnFromPython(pybind11::handle value, const std::string& name,
                              const std::optional<std::string>& dtype);
// The batch of a dict {name: value}; `dtypes`: per-field dtype names.
PyBatch batchFromDict(const pybind11::dict& columns, const pybind11::object& meta,
                      const pybind11::object& dtypes);
// A column as numpy (dense) or tide.Ragged, over the batch's bytes.
pybind11::object columnToPython(const data::Column& c, const pybind11::object& keep);
pybind11::dict batchToDict(const PyBatch& b);

}  // namespace tide::python
