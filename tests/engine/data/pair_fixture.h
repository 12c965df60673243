#pragma once
// Two connected transports (ranks as threads, MemoryStore rendezvous) with a
// BufferPool and BatchStore each, over a compiled backend.

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>

#include "engine/core/kv_store.h"
#include "engine/data/batch_store.h"
#include "engine/transport/registry.h"

namespace tide::data::testing {

struct Rank {
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<BufferPool> pool;
  std::unique_ptr<BatchStore> store;
};

inline PoolConfig smallPool() {
  PoolConfig c;
  c.classes = {{4096, 16}, {1 << 20, 8}, {16 << 20, 2}};
  c.waitTimeoutSeconds = 2;
  return c;
}

// Empty vector when the backend is not compiled (the caller skips).
inline std::vector<Rank> makeRanks(const std::string& backend, MemoryStore& store, int n,
                                   const PoolConfig& pool = smallPool()) {
  std::vector<Rank> ranks(n);
  if (!transport::whyNotCompiled(backend).empty()) return {};
  std::vector<std::future<Result<std::unique_ptr<transport::Transport>>>> fs;
  for (int r = 0; r < n; ++r)
    fs.push_back(std::async(std::launch::async, [&, r] {
      transport::TransportConfig c;
      c.backend = backend;
      c.rank = r;
      c.worldSize = n;
      c.store = &store;
      c.connectTimeoutSeconds = 10;
      c.opTimeoutSeconds = 10;
      return transport::createTransport(c);
    }));
  for (int r = 0; r < n; ++r) {
    ranks[r].transport = orThrow(fs[r].get());
    ranks[r].pool = orThrow(BufferPool::create(ranks[r].transport.get(), pool));
    ranks[r].store = std::make_unique<BatchStore>(*ranks[r].transport, store, *ranks[r].pool, 5);
  }
  return ranks;
}

}  // namespace tide::data::testing
