#include "python/bindings/data_node.h"

#include "engine/transport/registry.h"
#include "python/bindings/status_error.h"

namespace tide::python {
namespace py = pybind11;

std::unique_ptr<Node> Node::create(py::object store, NodeOptions o) {
  auto& ps = store.cast<PyStore&>();
  if (!ps.store) invalid("the store was closed");
  if (o.worldSize < 1 || o.rank < 0 || o.rank >= o.worldSize)
    invalid("rank " + std::to_string(o.rank) + " is not in a world of " +
            std::to_string(o.worldSize));
  if (o.timeoutSeconds <= 0) invalid("timeout must be positive");
  if (o.pool.empty()) o.pool = {{1ull << 20, 16}, {64ull << 20, 4}};
  auto checksums = check(data::parseChecksumPolicy(o.checksums));
  std::unique_ptr<Node> n(new Node());
  n->options_ = o;
  n->storeRef_ = store;
  n->store_ = ps.store.get();
  {
    py::gil_scoped_release nogil;
    transport::TransportConfig c;
    c.backend = o.backend;
    c.rank = o.rank;
    c.worldSize = o.worldSize;
    c.store = n->store_;
    c.streams = o.streams;
    c.devices = o.devices;
    c.listenAddress = o.listenAddress;
    c.connectTimeoutSeconds = o.timeoutSeconds;
    c.opTimeoutSeconds = o.timeoutSeconds;
    n->transport_ = check(transport::createTransport(c));
    data::PoolConfig pc;
    pc.classes = o.pool;
    pc.waitTimeoutSeconds = o.timeoutSeconds;
    n->pool_ = check(data::BufferPool::create(n->transport_.get(), pc));
    n->batches_ =
        std::make_unique<data::BatchStore>(*n->transport_, *n->store_, *n->pool_, o.timeoutSeconds);
    n->batches_->setChecksums(checksums);
  }
  return n;
}

Node::~Node() {
  // Without the GIL: tearing down a transport joins its threads, which may
  // drop the last reference to an array (and take the GIL to do it).
  py::gil_scoped_release nogil;
  batches_.reset();
  pool_.reset();
  transport_.reset();
}

Status Node::usable() const {
  if (closed()) return TIDE_ERROR(Code::kFailedPrecondition, "this Node was closed");
  return Status::ok();
}

Status Node::close() {
  if (closed()) return Status::ok();
  const auto stats = pool_->stats();
  if (stats.leasesOut != 0)
    return TIDE_ERROR(Code::kFailedPrecondition,
                      std::to_string(stats.leasesOut) +
                          " pool buffers are still in use (arrays or batches viewing them, or "
                          "published batches not yet removed); drop them first");
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mu_);
    batches_.reset();
    pool_.reset();
    transport_.reset();
  }
  storeRef_ = py::none();
  store_ = nullptr;
  return Status::ok();
}

}  // namespace tide::python
