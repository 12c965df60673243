#pragma once
// Checks on the store catalog a run leaves (`tide.store/1` JSON).

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace tide::exec {

inline nlohmann::json readJson(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

inline bool hasEvent(const nlohmann::json& catalog, const std::string& e) {
  for (const auto& x : catalog.at("events")) {
    if (x.get<std::string>() == e) return true;
  }
  return false;
}

// The newest snapshot is `version`, READY, with no replica on `lostNode`.
inline void expectNewestReadyWithout(const nlohmann::json& catalog, int version, int lostNode) {
  const auto& snap = catalog.at("snapshots").back();
  EXPECT_EQ(snap.at("version"), version);
  EXPECT_EQ(snap.at("state"), "READY");
  for (const auto& f : snap.at("fragments")) {
    for (const auto& r : f.at("replicas")) {
      EXPECT_NE(r.at("node"), lostNode) << "placed on a lost node";
    }
  }
}

}  // namespace tide::exec
