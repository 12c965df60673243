// tide.BusConfig, tide.RolloutProducer and tide.RolloutConsumer: the rollout
// bus (engine/data/rollout_bus.h) over a Node's batch store.

#include <pybind11/stl.h>

#include <optional>
#include <type_traits>

#include "engine/data/rollout_bus.h"
#include "python/bindings/batch_convert.h"
#include "python/bindings/data_node.h"
#include "python/bindings/module_parts.h"
#include "python/bindings/status_error.h"

namespace tide::python {
namespace py = pybind11;
using data::BusConfig;

namespace {

// A producer or consumer and the Node it runs on (kept alive with it).
template <typename T>
struct OnNode {
  py::object node;
  std::unique_ptr<T> side;
  Node& n() { return node.cast<Node&>(); }
};
using Producer = OnNode<data::RolloutProducer>;
using Consumer = OnNode<data::RolloutConsumer>;

BusConfig makeConfig(const std::string& mode, int producers, int consumers, int queue,
                     int64_t maxStaleness, const std::string& stale, const std::string& name,
                     double timeout, int64_t total) {
  BusConfig c;
  c.mode = check(data::parseBusMode(mode));
  c.stalePolicy = check(data::parseStalePolicy(stale));
  if (producers < 1 || consumers < 1 || queue < 1 || maxStaleness < 0 || timeout <= 0 || total < 0)
    invalid(
        "bus: producers, consumers and queue_capacity >= 1, max_staleness and total_batches >= 0, "
        "timeout > 0");
  c.producers = producers;
  c.consumers = consumers;
  c.queueCapacity = queue;
  c.maxStaleness = maxStaleness;
  c.name = name;
  c.timeoutSeconds = timeout;
  c.totalBatches = total;
  return c;
}

// A producer or consumer `index` of the bus, on `node`.
template <typename T>
OnNode<T> attach(py::object node, const BusConfig& c, int index) {
  constexpr bool producer = std::is_same_v<T, data::RolloutProducer>;
  const int count = producer ? c.producers : c.consumers;
  if (index < 0 || index >= count)
    invalid(std::string(producer ? "producer" : "consumer") + " index " + std::to_string(index) +
            " is not in [0, " + std::to_string(count) + ")");
  Node& n = node.cast<Node&>();
  check(n.usable());
  return OnNode<T>{node, std::make_unique<T>(n.batches(), n.store(), c, index)};
}

}  // namespace

void bindBus(py::module_& m) {
  py::class_<BusConfig>(m, "BusConfig", R"(How rollout workers and trainers meet.

mode 'sync': each step every producer publishes one batch and consumer c of C
reads its row share of each. mode 'async': one bounded queue; batches carry
the weight version that made them, and a consumer drops (or accepts) those
more than max_staleness versions behind its own.)")
      .def(py::init(&makeConfig), py::arg("mode") = "sync", py::arg("producers") = 1,
           py::arg("consumers") = 1, py::arg("queue_capacity") = 4, py::arg("max_staleness") = 1,
           py::arg("stale_policy") = "drop", py::arg("name") = "bus", py::arg("timeout") = 30.0,
           py::arg("total_batches") = 0)
      .def_property_readonly("mode", [](const BusConfig& c) { return data::busModeName(c.mode); })
      .def_readonly("producers", &BusConfig::producers)
      .def_readonly("consumers", &BusConfig::consumers)
      .def_readonly("queue_capacity", &BusConfig::queueCapacity)
      .def_readonly("max_staleness", &BusConfig::maxStaleness);

  py::class_<Producer>(m, "RolloutProducer", "A rollout worker's side of the bus.")
      .def(py::init(&attach<data::RolloutProducer>), py::arg("node"), py::arg("config"),
           py::arg("index"))
      .def(
          "put_step",
          [](Producer& p, int64_t step, const PyBatch& b) {
            py::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(p.n().mutex());
            check(p.side->putStep(step, b.batch));
          },
          py::arg("step"), py::arg("batch"), "sync: this producer's batch of `step`.")
      .def(
          "end_step",
          [](Producer& p, int64_t step) {
            py::gil_scoped_release nogil;
            check(p.side->endStep(step));
          },
          py::arg("step"), "sync: waits for every consumer, then frees the step's batches.")
      .def(
          "put",
          [](Producer& p, const PyBatch& b, int64_t version) {
            data::Batch copy = b.batch;
            py::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(p.n().mutex());
            check(p.side->put(std::move(copy), version));
          },
          py::arg("batch"), py::arg("weight_version"),
          "async: waits for room in the queue, then publishes the batch tagged with its version.")
      .def(
          "reap",
          [](Producer& p) {
            py::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(p.n().mutex());
            return check(p.side->reap());
          },
          "Frees the batches every reader finished; returns how many.");

  py::class_<Consumer>(m, "RolloutConsumer", "A trainer rank's side of the bus.")
      .def(py::init(&attach<data::RolloutConsumer>), py::arg("node"), py::arg("config"),
           py::arg("index"))
      .def(
          "get_step",
          [](Consumer& c, int64_t step) {
            std::vector<data::Batch> got;
            {
              py::gil_scoped_release nogil;
              std::lock_guard<std::mutex> lock(c.n().mutex());
              got = check(c.side->getStep(step));
            }
            std::vector<PyBatch> out;
            for (auto& b : got) out.push_back(PyBatch{std::move(b), c.node});
            return out;
          },
          py::arg("step"), "sync: this consumer's rows of every producer's batch of `step`.")
      .def(
          "end_step",
          [](Consumer& c, int64_t step) {
            py::gil_scoped_release nogil;
            check(c.side->endStep(step));
          },
          py::arg("step"))
      .def(
          "get",
          [](Consumer& c, int64_t version) -> py::object {
            std::optional<Result<data::Delivered>> got;
            {
              py::gil_scoped_release nogil;
              std::lock_guard<std::mutex> lock(c.n().mutex());
              got.emplace(c.side->get(version));
            }
            // Past total_batches: the end of the run, not an error.
            if (!got->isOk() && got->status().code() == Code::kOutOfRange) return py::none();
            data::Delivered d = check(std::move(*got));
            return py::make_tuple(PyBatch{std::move(d.batch), c.node}, d.weightVersion,
                                  d.staleness);
          },
          py::arg("current_version"),
          "async: (batch, weight_version, staleness) of the next batch it accepts, or None past "
          "total_batches.")
      .def_property_readonly("stats", [](Consumer& c) {
        const auto& s = c.side->stats();
        py::dict d;
        d["batches"] = s.batches;
        d["rows"] = s.rows;
        d["dropped"] = s.dropped;
        d["accepted_stale"] = s.acceptedStale;
        d["staleness"] = s.staleness;
        return d;
      });
}

}  // namespace tide::python
