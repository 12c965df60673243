#pragma once
// An in-process Transport for unit tests of higher layers: every rank of a
// fake world lives in one process and requests run synchronously at
// submit() with the same checks a real target makes (region, bounds, key).
// A destroyed rank is gone: requests to it fail with kUnavailable.

#include <memory>
#include <vector>

#include "engine/transport/transport.h"

namespace tide::transport::fakes {

class FakeFabric;

// Creates a connected fake world of worldSize ranks.
std::vector<std::unique_ptr<Transport>> createFakeWorld(int worldSize);

}  // namespace tide::transport::fakes
