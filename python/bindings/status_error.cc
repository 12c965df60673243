#include "python/bindings/status_error.h"

namespace tide::python {
namespace py = pybind11;

namespace {

PyObject* newClass(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  std::string full = std::string("tide.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(full.c_str(), doc, bases.ptr(), nullptr);
  if (cls == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

PyObject* gError = nullptr;
PyObject* gInvalid = nullptr;
PyObject* gTimeout = nullptr;
PyObject* gUnavailable = nullptr;
PyObject* gDataLoss = nullptr;

PyObject* classFor(Code c) {
  switch (c) {
    case Code::kInvalidArgument:
    case Code::kOutOfRange:
      return gInvalid;
    case Code::kTimeout:
      return gTimeout;
    case Code::kUnavailable:
      return gUnavailable;
    case Code::kDataLoss:
      return gDataLoss;
    default:
      return gError;
  }
}

}  // namespace

void invalid(const std::string& what) {
  throw StatusError(Status(Code::kInvalidArgument, what));
}

void registerErrors(py::module_& m) {
  py::handle runtime(PyExc_RuntimeError);
  gError = newClass(m, "Error", py::make_tuple(runtime),
                    "A tide failure; `code` names tide's status code (e.g. 'invalid argument').");
  py::handle base(gError);
  gInvalid = newClass(m, "InvalidArgument", py::make_tuple(base, py::handle(PyExc_ValueError)),
                      "Bad input: a file, an option, an array of the wrong kind.");
  gTimeout = newClass(m, "Timeout", py::make_tuple(base, py::handle(PyExc_TimeoutError)),
                      "A peer or the rendezvous store did not answer in time.");
  gUnavailable = newClass(m, "Unavailable", py::make_tuple(base, py::handle(PyExc_ConnectionError)),
                          "A peer is gone or a device is missing.");
  gDataLoss = newClass(m, "DataLoss", py::make_tuple(base),
                       "Bytes that do not verify: a checksum or a weight check failed.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      // The message without the C++ source location: the Python traceback
      // says where the call came from.
      std::string text = std::string(codeName(e.status.code())) + ": " + e.status.message();
      py::object exc = py::reinterpret_steal<py::object>(
          PyObject_CallFunction(classFor(e.status.code()), "s", text.c_str()));
      if (!exc) throw py::error_already_set();
      exc.attr("code") = codeName(e.status.code());
      PyErr_SetObject(classFor(e.status.code()), exc.ptr());
    }
  });
}

}  // namespace tide::python
