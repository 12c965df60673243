#pragma once
// The catalog as JSON (what `tide sync --strategy store --store-catalog F`
// leaves and `tide store` reads): nodes, snapshots with state, leases,
// fragments (bytes, hash, replicas) and the frozen manifest with its hash.

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/sync/store/snapshot_catalog.h"

namespace tide::sync::store {

nlohmann::json catalogToJson(const SnapshotCatalog& catalog);

// Checks one snapshot entry of catalogToJson(): its manifest text hashes to
// its manifest hash and lists the fragments the entry has (kDataLoss if not).
Status checkSnapshotJson(const nlohmann::json& snapshot);

}  // namespace tide::sync::store
