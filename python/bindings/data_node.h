#pragma once
// What a Python process holds to take part in the data plane: the rendezvous
// store (PyStore) and one rank's Node, its transport connected to every
// peer, its registered BufferPool and its BatchStore. Calls that wait
// (connecting, put, get, the bus) run without the GIL; a Node serializes
// its own calls (a transport is used from one thread at a time).

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/data/batch_store.h"
#include "engine/data/buffer_pool.h"
#include "engine/transport/transport.h"

namespace tide::python {

struct PyStore {
  std::unique_ptr<Store> store;
  std::string host;  // empty for a MemoryStore
  int port = 0;
};

struct NodeOptions {
  std::string backend = "shm";
  int rank = 0;
  int worldSize = 1;
  std::vector<data::SizeClass> pool;
  double timeoutSeconds = 30;
  std::string checksums = "auto";
  int streams = 4;
  std::vector<std::string> devices;
  std::string listenAddress = "127.0.0.1";
};

class Node {
 public:
  // Connects to every peer through `store` (all ranks create theirs at once).
  static std::unique_ptr<Node> create(pybind11::object store, NodeOptions options);
  ~Node();

  data::BatchStore& batches() { return *batches_; }
  Store& store() { return *store_; }
  data::BufferPool& pool() { return *pool_; }
  transport::Transport& transport() { return *transport_; }
  const NodeOptions& options() const { return options_; }
  std::mutex& mutex() { return mu_; }
  bool closed() const { return transport_ == nullptr; }
  // kFailedPrecondition once close()d.
  Status usable() const;
  // Gives back the pool, the transport and the store reference; fails while
  // arrays still view the pool's buffers (their memory would go with it).
  Status close();

 private:
  Node() = default;
  NodeOptions options_;
  pybind11::object storeRef_;  // keeps the PyStore alive
  Store* store_ = nullptr;
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<data::BufferPool> pool_;
  std::unique_ptr<data::BatchStore> batches_;
  std::mutex mu_;
};

}  // namespace tide::python
