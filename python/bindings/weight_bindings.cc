// tide.WeightSync: one rank of a weight sync between Python processes
// (weight_sync.h).

#include <pybind11/stl.h>

#include "python/bindings/module_parts.h"
#include "python/bindings/weight_sync.h"

namespace tide::python {
namespace py = pybind11;

void bindWeights(py::module_& m) {
  py::class_<WeightSync>(m, "WeightSync", R"doc(
One rank of a weight sync: rank 0 is the trainer, ranks 1..engines the
inference engines. Every rank passes the same tensors (name -> C-contiguous
numpy array over its own memory; torch tensors through tide.weight_sync()).
The plan is made from the tensors as given; each update() copies the
trainer's arrays into its registered shard, runs the plan's transfer,
checks every engine byte against digests the trainer computed from its
arrays, and only then writes the engine's arrays.)doc")
      .def(py::init([](py::object store, py::dict tensors, int rank, int engines,
                       std::string strategy, std::string backend, std::string name, double timeout,
                       double connectTimeout, uint64_t bucket, std::vector<std::string> bf16,
                       int streams, std::vector<std::string> devices) {
             WeightSyncOptions o;
             o.rank = rank;
             o.engines = engines;
             o.strategy = std::move(strategy);
             o.backend = std::move(backend);
             o.name = std::move(name);
             o.timeoutSeconds = timeout;
             o.connectTimeoutSeconds = connectTimeout;
             o.bucketBytes = bucket;
             o.streams = streams;
             o.devices = std::move(devices);
             return WeightSync::create(std::move(store), std::move(tensors), std::move(bf16),
                                       std::move(o));
           }),
           py::arg("store"), py::arg("tensors"), py::kw_only(), py::arg("rank"), py::arg("engines"),
           py::arg("strategy") = "p2p", py::arg("backend") = "shm", py::arg("name") = "weights",
           py::arg("timeout") = 60.0, py::arg("connect_timeout") = 60.0, py::arg("bucket") = 0,
           py::arg("bf16") = std::vector<std::string>{}, py::arg("streams") = 4,
           py::arg("devices") = std::vector<std::string>{})
      .def("update", &WeightSync::update, R"doc(
One update, on every rank at once. Returns this rank's figures: step,
seconds (the call), transfer_seconds, verify_seconds, bytes_sent,
bytes_verified. Raises tide.DataLoss when a byte is not the trainer's (the
engine's arrays keep their last verified values).)doc")
      .def("plan_json", &WeightSync::planJson, "The plan as JSON text (schema tide.plan).")
      .def_property_readonly("step", &WeightSync::step)
      .def_property_readonly("rank", [](const WeightSync& w) { return w.options().rank; })
      .def_property_readonly("strategy", [](const WeightSync& w) { return w.options().strategy; })
      .def("close", &WeightSync::close, "Gives back the transport and the registered buffers.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](WeightSync& w, py::args) { w.close(); });
}

}  // namespace tide::python
