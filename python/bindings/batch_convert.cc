#include "python/bindings/batch_convert.h"

#include <cstring>

#include "python/bindings/array_buffer.h"
#include "python/bindings/json_object.h"
#include "python/bindings/status_error.h"

namespace tide::python {
namespace py = pybind11;
using data::BufferRef;
using data::Column;
using data::DType;

namespace {

DType resolveDType(const py::array& a, const std::optional<std::string>& named,
                   const std::string& where) {
  DType own = dtypeOfArray(a, where);
  if (!named || named->empty()) return own;
  DType t = check(data::parseDType(*named));
  if (data::dtypeSize(t) != data::dtypeSize(own))
    invalid(where + ": dtype " + *named + " has " + std::to_string(data::dtypeSize(t)) +
            "-byte elements, the array " + std::to_string(data::dtypeSize(own)) + "-byte ones");
  return t;
}

py::array asArray(py::handle h, const std::string& where) {
  if (py::isinstance<py::array>(h)) return py::reinterpret_borrow<py::array>(h);
  // Anything with the buffer protocol (bytes, memoryview, array.array).
  if (PyObject_CheckBuffer(h.ptr())) return py::array(py::reinterpret_borrow<py::object>(h));
  invalid(where + ": expected a numpy array, tide.Ragged or a list of rows, got " +
          std::string(py::str(py::type::of(h).attr("__name__"))));
}

Column raggedFromPython(const Ragged& r, const std::string& where,
                        const std::optional<std::string>& named) {
  if (r.offsets.ndim() != 1 || dtypeOfArray(r.offsets, where + " offsets") != DType::kI64)
    invalid(where + ": offsets must be a 1-D int64 array (rows + 1 entries)");
  if (r.offsets.size() == 0) invalid(where + ": offsets need at least one entry (0 rows: [0])");
  if (r.values.ndim() < 1) invalid(where + ": values must have at least one dimension");
  BufferRef values = refFromArray(r.values, where + " values");
  BufferRef offsets = refFromArray(r.offsets, where + " offsets");
  if (r.object) {
    if (dtypeOfArray(r.values, where) != DType::kU8 || r.values.ndim() != 1)
      invalid(where + ": an object column's values are a 1-D uint8 array");
    return check(Column::object(values, offsets));
  }
  std::optional<std::string> dt = named;
  if (!r.dtype.empty()) dt = r.dtype;
  DType t = resolveDType(r.values, dt, where);
  std::vector<int64_t> inner;
  for (py::ssize_t d = 1; d < r.values.ndim(); ++d) inner.push_back(r.values.shape(d));
  // The offsets count items (values' first dimension); the factory checks
  // them against the values' size.
  return check(Column::ragged(t, std::move(inner), values, offsets));
}

// A list of rows: arrays / lists of numbers (ragged) or bytes (object), copied.
Column rowsFromPython(const py::list& rows, const std::string& where,
                      const std::optional<std::string>& named) {
  std::vector<int64_t> off(rows.size() + 1, 0);
  if (!rows.empty() &&
      (py::isinstance<py::bytes>(rows[0]) || py::isinstance<py::bytearray>(rows[0]))) {
    std::vector<uint8_t> bytes;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!py::isinstance<py::bytes>(rows[i]) && !py::isinstance<py::bytearray>(rows[i]))
        invalid(where + ": row " + std::to_string(i) + " is not bytes like row 0");
      std::string s = rows[i].cast<std::string>();
      bytes.insert(bytes.end(), s.begin(), s.end());
      off[i + 1] = static_cast<int64_t>(bytes.size());
    }
    return check(Column::object(BufferRef::ownVector(std::move(bytes)),
                                BufferRef::ownVector(std::move(off))));
  }
  std::vector<py::array> arrays;
  for (size_t i = 0; i < rows.size(); ++i) {
    py::array a = py::isinstance<py::array>(rows[i])
                      ? py::reinterpret_borrow<py::array>(rows[i])
                      : py::array(py::reinterpret_borrow<py::object>(rows[i]));
    if (a.ndim() != 1) invalid(where + ": row " + std::to_string(i) + " is not 1-D");
    arrays.push_back(py::array::ensure(a, py::array::c_style));
  }
  if (arrays.empty()) invalid(where + ": an empty list of rows has no dtype; pass tide.Ragged");
  DType t = resolveDType(arrays[0], named, where);
  const uint64_t item = data::dtypeSize(t);
  std::vector<uint8_t> vals;
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (dtypeOfArray(arrays[i], where) != dtypeOfArray(arrays[0], where))
      invalid(where + ": row " + std::to_string(i) + " has another dtype than row 0");
    const auto* p = static_cast<const uint8_t*>(arrays[i].data());
    vals.insert(vals.end(), p, p + arrays[i].nbytes());
    off[i + 1] = static_cast<int64_t>(vals.size() / item);
  }
  return check(Column::ragged(t, {}, BufferRef::ownVector(std::move(vals)),
                              BufferRef::ownVector(std::move(off))));
}

}  // namespace

Column columnFromPython(py::handle value, const std::string& name,
                        const std::optional<std::string>& dtype) {
  const std::string where = "column '" + name + "'";
  if (py::isinstance<Ragged>(value))
    return raggedFromPython(value.cast<const Ragged&>(), where, dtype);
  if (py::isinstance<py::list>(value)) return rowsFromPython(value.cast<py::list>(), where, dtype);
  py::array a = asArray(value, where);
  if (a.ndim() < 1) invalid(where + ": a 0-d array has no rows; give it shape [rows, ...]");
  DType t = resolveDType(a, dtype, where);
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  return check(Column::dense(t, std::move(shape), refFromArray(a, where)));
}

PyBatch batchFromDict(const py::dict& columns, const py::object& meta, const py::object& dtypes) {
  PyBatch out;
  py::dict named = dtypes.is_none() ? py::dict() : dtypes.cast<py::dict>();
  for (auto kv : columns) {
    if (!py::isinstance<py::str>(kv.first)) invalid("batch field names must be str");
    std::string name = kv.first.cast<std::string>();
    std::optional<std::string> dt;
    if (named.contains(kv.first)) dt = named[kv.first].cast<std::string>();
    check(out.batch.add(name, columnFromPython(kv.second, name, dt)));
  }
  if (!meta.is_none()) {
    nlohmann::json j = fromPython(meta, "batch meta");
    if (!j.is_object()) invalid("batch meta must be a dict");
    out.batch.meta() = std::move(j);
  }
  out.keep = py::none();
  return out;
}

py::object columnToPython(const Column& c, const py::object& keep) {
  if (!c.isRagged()) return arrayView(c.data(), c.dtype(), c.shape(), keep);
  auto off = c.offsets();
  const int64_t first = off.front();
  const int64_t items = off.back() - first;
  auto payload = c.payload();
  BufferRef values{c.data().owner, payload.data(), payload.size()};
  std::vector<int64_t> vshape{items};
  vshape.insert(vshape.end(), c.shape().begin(), c.shape().end());
  Ragged r;
  r.object = c.kind() == data::ColumnKind::kObject;
  r.values = arrayView(values, c.kind() == data::ColumnKind::kObject ? DType::kU8 : c.dtype(),
                       vshape, keep);
  if (c.dtype() == DType::kBF16) r.dtype = "bf16";
  if (first == 0) {
    r.offsets = arrayView(c.offsetsRef(), DType::kI64, {int64_t(off.size())}, keep);
  } else {
    py::array_t<int64_t> rebased(static_cast<py::ssize_t>(off.size()));
    int64_t* p = rebased.mutable_data();
    for (size_t i = 0; i < off.size(); ++i) p[i] = off[i] - first;
    rebased.attr("flags").attr("writeable") = false;
    r.offsets = rebased;
  }
  return py::cast(std::move(r));
}

py::dict batchToDict(const PyBatch& b) {
  py::dict out;
  for (const auto& [name, col] : b.batch.columns())
    out[py::str(name)] = columnToPython(col, b.keep);
  return out;
}

}  // namespace tide::python
