#include "python/bindings/array_buffer.h"

#include <memory>

#include "python/bindings/status_error.h"

namespace tide::python {
namespace py = pybind11;
using data::DType;

DType dtypeOfArray(const py::array& a, const std::string& where) {
  return dtypeOfNumpy(a.dtype(), where);
}

DType dtypeOfNumpy(const py::dtype& dt, const std::string& where) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'b' && size == 1) return DType::kBool;
  if (kind == 'u') {
    if (size == 1) return DType::kU8;
    if (size == 2) return DType::kU16;
    if (size == 4) return DType::kU32;
    if (size == 8) return DType::kU64;
  }
  if (kind == 'i') {
    if (size == 1) return DType::kI8;
    if (size == 2) return DType::kI16;
    if (size == 4) return DType::kI32;
    if (size == 8) return DType::kI64;
  }
  if (kind == 'f') {
    if (size == 2) return DType::kF16;
    if (size == 4) return DType::kF32;
    if (size == 8) return DType::kF64;
  }
  invalid(where + ": numpy dtype " + std::string(py::str(py::handle(dt))) +
          " has no tide dtype (bool, int8-64, uint8-64, float16/32/64; bf16 through torch)");
}

py::dtype numpyDType(DType t) {
  switch (t) {
    case DType::kU8:
      return py::dtype::of<uint8_t>();
    case DType::kI8:
      return py::dtype::of<int8_t>();
    case DType::kI16:
    case DType::kBF16:  // int16, not uint16: torch (1.13) has no uint16 to view it from
      return py::dtype::of<int16_t>();
    case DType::kI32:
      return py::dtype::of<int32_t>();
    case DType::kI64:
      return py::dtype::of<int64_t>();
    case DType::kU16:
      return py::dtype::of<uint16_t>();
    case DType::kU32:
      return py::dtype::of<uint32_t>();
    case DType::kU64:
      return py::dtype::of<uint64_t>();
    case DType::kF16:
      return py::dtype("float16");
    case DType::kF32:
      return py::dtype::of<float>();
    case DType::kF64:
      return py::dtype::of<double>();
    case DType::kBool:
      return py::dtype::of<bool>();
  }
  return py::dtype::of<uint8_t>();
}

data::BufferRef refFromArray(const py::array& a, const std::string& where) {
  if (!(a.flags() & py::array::c_style))
    invalid(where + ": array is not C-contiguous (strides " +
            std::string(py::str(py::tuple(a.attr("strides")))) +
            "); pass numpy.ascontiguousarray(x), which copies it once");
  PyObject* obj = a.ptr();
  Py_INCREF(obj);
  std::shared_ptr<const void> owner(static_cast<const void*>(obj), [](const void* p) {
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p)));
  });
  return data::BufferRef{std::move(owner), static_cast<const uint8_t*>(a.data()),
                         static_cast<uint64_t>(a.nbytes())};
}

namespace {
struct Keep {
  std::shared_ptr<const void> owner;
  py::object keep;
  // The bytes' owner (a lease) goes back before `keep` (its pool's Node) may go.
  ~Keep() { owner.reset(); }
};
}  // namespace

py::array arrayView(const data::BufferRef& ref, DType t, const std::vector<int64_t>& shape,
                    py::object keep, bool writable) {
  auto* k = new Keep{ref.owner, std::move(keep)};
  py::capsule base(k, [](void* p) { delete static_cast<Keep*>(p); });
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array out(numpyDType(t), dims, {}, ref.data, base);
  if (!writable) {
    auto flags = out.attr("flags");
    flags.attr("writeable") = false;
  }
  return out;
}

}  // namespace tide::python
