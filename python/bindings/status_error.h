#pragma once
// tide's Status as a Python exception. The module is the boundary where
// errors leave C++ (as main() is for the CLI): a failed Status is thrown as
// tide::StatusError and translated to one of the exception classes below,
// carrying the status text; nothing else crosses into Python.
//
//   tide.Error            RuntimeError   every tide failure (attribute `code`)
//   tide.InvalidArgument  Error, ValueError      bad input (a file, a flag, an array)
//   tide.Timeout          Error, TimeoutError    a peer or the store did not answer in time
//   tide.Unavailable      Error, ConnectionError a peer is gone, a device is missing
//   tide.DataLoss         Error                  a checksum or a verification failed

#include <pybind11/pybind11.h>

#include "engine/core/status.h"

namespace tide::python {

// Creates the classes in `m` and registers the translator.
void registerErrors(pybind11::module_& m);

inline void check(const Status& s) {
  orThrow(s);
}
template <typename T>
T check(Result<T> r) {
  return orThrow(std::move(r));
}
// Throws kInvalidArgument with `what` (bad input found by the bindings).
[[noreturn]] void invalid(const std::string& what);

}  // namespace tide::python
