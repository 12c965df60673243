// tide.Store, tide.Node, tide.Batch and tide.Ragged: the data plane's types.

#include <pybind11/stl.h>

#include <memory>

#include "engine/exec/rendezvous/tcp_store.h"
#include "python/bindings/array_buffer.h"
#include "python/bindings/batch_convert.h"
#include "python/bindings/data_node.h"
#include "python/bindings/json_object.h"
#include "python/bindings/module_parts.h"
#include "python/bindings/status_error.h"

namespace tide::python {
namespace py = pybind11;
using data::Batch;

namespace {

void bindStore(py::module_& m) {
  py::class_<PyStore>(m, "Store", R"(The rendezvous store ranks find each other through.

Store.memory() serves ranks that are threads of one process; Store.host()
serves ranks that are processes (one hosts it, the others connect()).)")
      .def_static(
          "memory",
          [] {
            return PyStore{std::make_unique<MemoryStore>(), "", 0};
          },
          "A store in this process's memory (ranks as threads).")
      .def_static(
          "host",
          [](const std::string& host, int port, const std::string& token) {
            std::unique_ptr<exec::TcpStore> s;
            {
              py::gil_scoped_release nogil;
              s = check(exec::TcpStore::host(host, port, token));
            }
            int p = s->port();
            return PyStore{std::move(s), host, p};
          },
          py::arg("host") = "127.0.0.1", py::arg("port") = 0, py::arg("token") = "",
          "Serves a store on host:port (0: a free port, see .port) for other processes.")
      .def_static(
          "connect",
          [](const std::string& host, int port, const std::string& token, double timeout) {
            std::unique_ptr<exec::TcpStore> s;
            {
              py::gil_scoped_release nogil;
              s = check(exec::TcpStore::connect(host, port, token, timeout));
            }
            return PyStore{std::move(s), host, port};
          },
          py::arg("host"), py::arg("port"), py::arg("token") = "", py::arg("timeout") = 30.0,
          "Connects to a store another process hosts, retrying while it starts.")
      .def_readonly("port", &PyStore::port, "TCP port of a hosted or connected store (0: memory).")
      .def_readonly("address", &PyStore::host, "Host of a hosted or connected store ('': memory).")
      .def(
          "set",
          [](PyStore& s, const std::string& k, py::bytes v) {
            std::string value = v;
            py::gil_scoped_release nogil;
            check(s.store->set(k, value));
          },
          py::arg("key"), py::arg("value"))
      .def(
          "get",
          [](PyStore& s, const std::string& k, double timeout) {
            std::string v;
            {
              py::gil_scoped_release nogil;
              v = check(s.store->get(k, timeout));
            }
            return py::bytes(v);
          },
          py::arg("key"), py::arg("timeout") = 30.0,
          "The value of `key`, waiting up to `timeout` s for it (tide.Timeout).")
      .def(
          "add",
          [](PyStore& s, const std::string& k, int64_t delta) {
            py::gil_scoped_release nogil;
            return check(s.store->add(k, delta));
          },
          py::arg("key"), py::arg("delta") = 1, "Adds to a counter; returns its new value.")
      .def(
          "barrier",
          [](PyStore& s, const std::string& name, int count, double timeout) {
            py::gil_scoped_release nogil;
            check(storeBarrier(*s.store, name, count, timeout));
          },
          py::arg("name"), py::arg("count"), py::arg("timeout") = 30.0,
          "Waits until `count` callers reached barrier `name`.");
}

std::vector<data::RowRange> rowRanges(const py::object& rows) {
  std::vector<data::RowRange> out;
  if (rows.is_none()) return out;
  for (auto r : rows) {
    auto t = r.cast<py::tuple>();
    if (t.size() != 2) invalid("rows: each range is (begin, end)");
    out.push_back({t[0].cast<int64_t>(), t[1].cast<int64_t>()});
  }
  return out;
}

Node& live(py::object& self) {
  Node& n = self.cast<Node&>();
  check(n.usable());
  return n;
}

void bindNode(py::module_& m) {
  py::class_<Node>(m, "Node", R"(One rank of the data plane: a transport connected to
every peer, a registered buffer pool and a batch store.

Every rank of the world creates its Node at about the same time (creation
waits for the peers, up to `timeout` s). `pool` lists size classes as
(buffer_bytes, count); a get() lands a batch in one buffer, so the largest
class must hold the largest batch read.)")
      .def(py::init([](py::object store, const std::string& backend, int rank, int world,
                       std::vector<std::pair<uint64_t, uint32_t>> pool, double timeout,
                       const std::string& checksums, int streams, std::vector<std::string> devices,
                       const std::string& listen) {
             NodeOptions o;
             o.backend = backend;
             o.rank = rank;
             o.worldSize = world;
             for (auto [bytes, count] : pool) o.pool.push_back({bytes, count});
             o.timeoutSeconds = timeout;
             o.checksums = checksums;
             o.streams = streams;
             o.devices = std::move(devices);
             o.listenAddress = listen;
             return Node::create(store, o);
           }),
           py::arg("store"), py::arg("backend") = "shm", py::arg("rank") = 0,
           py::arg("world_size") = 1,
           py::arg("pool") = std::vector<std::pair<uint64_t, uint32_t>>{},
           py::arg("timeout") = 30.0, py::arg("checksums") = "auto", py::arg("streams") = 4,
           py::arg("devices") = std::vector<std::string>{}, py::arg("listen") = "127.0.0.1")
      .def_property_readonly("rank", [](Node& n) { return n.options().rank; })
      .def_property_readonly("world_size", [](Node& n) { return n.options().worldSize; })
      .def_property_readonly("backend", [](Node& n) { return n.options().backend; })
      .def_property_readonly("checksums",
                             [](py::object self) { return live(self).batches().checksumsOnPut(); })
      .def(
          "empty",
          [](py::object self, std::vector<int64_t> shape, py::object dtype) {
            Node& n = live(self);
            data::DType t = dtypeOfNumpy(py::dtype::from_args(dtype), "empty()");
            uint64_t elems = check(data::shapeElements(shape));
            uint64_t bytes = std::max<uint64_t>(1, elems * data::dtypeSize(t));
            data::Lease lease;
            {
              py::gil_scoped_release nogil;
              lease = check(n.pool().acquire(bytes));
            }
            auto held = std::make_shared<data::Lease>(std::move(lease));
            data::BufferRef ref{held, held->data(), bytes};
            return arrayView(ref, t, shape, self, true);
          },
          py::arg("shape"), py::arg("dtype"),
          R"(A writable array in this node's registered pool memory: a batch built
over such arrays is published by put() in place (no copy).)")
      .def(
          "put",
          [](py::object self, const std::string& id, const PyBatch& b, int readers) {
            Node& n = live(self);
            data::PutOptions po;
            po.expectedReaders = readers;
            py::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(n.mutex());
            check(n.batches().put(id, b.batch, po));
          },
          py::arg("id"), py::arg("batch"), py::arg("readers") = 1,
          R"(Publishes `batch` under `id` for `readers` readers. Its arrays must not
change until the batch is removed (reap() after every reader's done()).)")
      .def(
          "get",
          [](py::object self, const std::string& id, py::object fields, py::object rows,
             bool verify, double timeout) {
            Node& n = live(self);
            data::ReadSpec spec;
            if (!fields.is_none()) spec.fields = fields.cast<std::vector<std::string>>();
            spec.rows = rowRanges(rows);
            spec.verify = verify;
            PyBatch out;
            {
              py::gil_scoped_release nogil;
              std::lock_guard<std::mutex> lock(n.mutex());
              auto m = check(n.batches().manifest(id, timeout));
              out.batch = check(n.batches().read(m, spec));
            }
            out.keep = self;
            return out;
          },
          py::arg("id"), py::arg("fields") = py::none(), py::arg("rows") = py::none(),
          py::arg("verify") = true, py::arg("timeout") = 30.0,
          R"(Reads batch `id` (waiting up to `timeout` s for it to be published):
the chosen fields and row ranges [(begin, end), ...], landed in one pool
buffer; the batch's arrays are views of it.)")
      .def(
          "done",
          [](py::object self, const std::string& id) {
            Node& n = live(self);
            py::gil_scoped_release nogil;
            check(n.batches().done(id));
          },
          py::arg("id"), "Tells the publisher this reader is finished with batch `id`.")
      .def(
          "reap",
          [](py::object self) {
            Node& n = live(self);
            py::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(n.mutex());
            return check(n.batches().reap());
          },
          "Removes this node's batches every reader is done with; returns how many.")
      .def(
          "remove",
          [](py::object self, const std::string& id) {
            Node& n = live(self);
            py::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(n.mutex());
            check(n.batches().remove(id));
          },
          py::arg("id"))
      .def(
          "stats",
          [](py::object self) {
            Node& n = live(self);
            auto s = n.batches().stats();
            auto p = n.pool().stats();
            py::dict d;
            d["put_bytes_packed"] = s.putBytesPacked;
            d["put_bytes_zero_copy"] = s.putBytesZeroCopy;
            d["get_bytes"] = s.getBytes;
            d["pool_capacity_bytes"] = p.capacityBytes;
            d["pool_leased_bytes"] = p.leasedBytes;
            d["pool_leases_out"] = p.leasesOut;
            d["holding"] = n.batches().holding();
            return d;
          },
          "Bytes put packed / in place, bytes read, and the pool's use.")
      .def(
          "close", [](Node& n) { check(n.close()); },
          "Gives back the transport and the pool (fails while arrays view them).");
}

void bindBatch(py::module_& m) {
  py::class_<Ragged>(m, "Ragged",
                     R"(A typed-ragged column: row i is values[offsets[i]:offsets[i+1]].

`values` has shape [items, *inner]; `offsets` is int64 [rows + 1].
object=True: opaque bytes per row (values uint8). dtype: tide's dtype where
it is not the array's ('bf16' over an int16 array).)")
      .def(py::init([](py::array values, py::array offsets, bool object, std::string dtype) {
             return Ragged{std::move(values), std::move(offsets), object, std::move(dtype)};
           }),
           py::arg("values"), py::arg("offsets"), py::arg("object") = false, py::arg("dtype") = "")
      .def_readonly("values", &Ragged::values)
      .def_readonly("offsets", &Ragged::offsets)
      .def_readonly("object", &Ragged::object)
      .def_readonly("dtype", &Ragged::dtype)
      .def("__len__", &Ragged::rows)
      .def("__getitem__", [](const Ragged& r, int64_t i) -> py::object {
        if (i < 0) i += r.rows();
        if (i < 0 || i >= r.rows()) throw py::index_error("row out of range");
        auto off = r.offsets.cast<py::array_t<int64_t>>();
        int64_t b = off.at(i), e = off.at(i + 1);
        py::object row = r.values[py::slice(b, e, 1)];
        if (r.object) return py::bytes(py::array(row).attr("tobytes")());
        return row;
      });

  py::class_<PyBatch>(m, "Batch",
                      R"(Named columns sharing one leading row dimension, and a JSON meta dict.

Batch.from_dict({'reward': ndarray, 'tokens': Ragged or list of rows}) builds
one over the arrays' memory (a list of rows is copied). Columns read back are
views of tide's bytes: numpy arrays (dense) or tide.Ragged.)")
      .def_static("from_dict", &batchFromDict, py::arg("columns"), py::arg("meta") = py::none(),
                  py::arg("dtypes") = py::none())
      .def("to_dict", &batchToDict, "Every column: numpy array (dense) or tide.Ragged.")
      .def_property_readonly("rows", [](const PyBatch& b) { return b.batch.rows(); })
      .def_property_readonly("fields", [](const PyBatch& b) { return b.batch.fieldNames(); })
      .def_property_readonly(
          "nbytes", [](const PyBatch& b) { return b.batch.payloadBytes(); },
          "Payload bytes of every column (values and ragged offsets).")
      .def_property(
          "meta", [](const PyBatch& b) { return toPython(b.batch.meta()); },
          [](PyBatch& b, py::object v) {
            nlohmann::json j = fromPython(v, "batch meta");
            if (!j.is_object()) invalid("batch meta must be a dict");
            b.batch.meta() = std::move(j);
          })
      .def("__len__", [](const PyBatch& b) { return b.batch.rows(); })
      .def("__contains__", [](const PyBatch& b, const std::string& n) { return b.batch.has(n); })
      .def("__getitem__",
           [](const PyBatch& b, const std::string& name) {
             const data::Column* c = b.batch.find(name);
             if (c == nullptr) throw py::key_error(name);
             return columnToPython(*c, b.keep);
           })
      .def(
          "dtype",
          [](const PyBatch& b, const std::string& name) {
            return std::string(data::dtypeName(check(b.batch.column(name))->dtype()));
          },
          py::arg("name"), "tide's dtype name of a column ('bf16', 'i32', ...).")
      .def(
          "slice",
          [](const PyBatch& b, int64_t begin, int64_t end) {
            return PyBatch{check(b.batch.slice(begin, end)), b.keep};
          },
          py::arg("begin"), py::arg("end"), "Rows [begin, end) as a view.")
      .def(
          "select",
          [](const PyBatch& b, std::vector<std::string> names) {
            return PyBatch{check(b.batch.selectFields(names)), b.keep};
          },
          py::arg("fields"))
      .def(
          "chunk",
          [](const PyBatch& b, int64_t n) {
            std::vector<PyBatch> out;
            for (auto& c : check(b.batch.chunk(n))) out.push_back(PyBatch{std::move(c), b.keep});
            return out;
          },
          py::arg("n"), "n nearly equal row ranges (views).")
      .def_static(
          "concat",
          [](const std::vector<PyBatch>& parts) {
            std::vector<Batch> bs;
            for (const auto& p : parts) bs.push_back(p.batch);
            return PyBatch{check(Batch::concat(bs)), py::none()};
          },
          py::arg("parts"), "Rows of every batch in order, into new columns (a copy).")
      .def("__repr__", [](const PyBatch& b) {
        std::string s = "tide.Batch(rows=" + std::to_string(b.batch.rows()) + ", fields=[";
        for (size_t i = 0; i < b.batch.columns().size(); ++i) {
          const auto& [name, c] = b.batch.columns()[i];
          s += (i ? ", " : "") + name + ":" + data::dtypeName(c.dtype()) +
               (c.isRagged() ? "[ragged]" : "");
        }
        return s + "])";
      });
}

}  // namespace

void bindData(py::module_& m) {
  bindStore(m);
  bindNode(m);
  bindBatch(m);
}

}  // namespace tide::python
