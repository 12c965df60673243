#pragma once
// The context block every result document carries, as Google Benchmark's
// "context" does: where and from what the figures came. Host and load are
// read when called; compiler, build type and git revision are those of this
// binary (baked at build time, cmake/TideGitRevision.cmake).
//
//   {"host": "...", "cpu_model": "...", "cpus": 2, "cpu_cores": 2,
//    "load_average": [1.2, 0.9, 0.7], "kernel": "Linux 6.1.0 x86_64",
//    "compiler": "gcc 12.2.0", "build_type": "RelWithDebInfo",
//    "assertions": false, "git_revision": "<sha>", "git_modified": false,
//    "tide_version": "0.1.0", "date": "2024-01-01T00:00:00Z"}

#include <nlohmann/json.hpp>

namespace tide::harness {

nlohmann::json runContext();

}  // namespace tide::harness
