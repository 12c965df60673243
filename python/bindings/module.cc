// The extension module tide._tide; python/tide/__init__.py is its face.

#include <pybind11/pybind11.h>

#include "engine/transport/registry.h"
#include "python/bindings/module_parts.h"
#include "python/bindings/status_error.h"

namespace py = pybind11;

PYBIND11_MODULE(_tide, m) {
  m.doc() = "tide: the rollout data plane, weight-sync planning and the cluster simulator";
  tide::python::registerErrors(m);
  m.def("backends", &tide::transport::compiledBackends,
        "Transport backends compiled into this build ('tcp', 'shm', 'rdma', ...).");
  m.def("why_cannot_run", &tide::transport::whyCannotRunHere, py::arg("backend"),
        "Why a backend cannot run on this machine ('' when it can).");
  tide::python::bindData(m);
  tide::python::bindBus(m);
  tide::python::bindSim(m);
  tide::python::bindWeights(m);
}
