#!/usr/bin/env bash
# Where a build's time goes: the wall and CPU time of a clean build, the 20
# slowest translation units, the links, and the headers included most often
# with what each costs to parse alone.
#   build-profile.sh [--clean] [BUILD_DIR]   (default: build, preset default)
# --clean: configure and build BUILD_DIR from nothing first (minutes), timed
# by scripts/timed-build.sh (user+sys CPU seconds and the reference compile's,
# whose ratio results/budgets/build.toml holds); without it, the figures of
# the build dir's last build (.ninja_log).
set -euo pipefail
cd "$(dirname "$0")/.."
clean=0
if [ "${1:-}" = "--clean" ]; then clean=1; shift; fi
BUILD=${1:-build}
JOBS=$(nproc)
if [ "$clean" = 1 ]; then
  [ "$BUILD" = build ] || { echo "build-profile: --clean builds the default preset's dir, build" >&2; exit 2; }
  rm -rf "$BUILD"
  cmake --preset default > /dev/null
  bash scripts/timed-build.sh "$BUILD" "$JOBS" > "$BUILD/.build-log" 2>&1 \
    || { tail -20 "$BUILD/.build-log"; exit 1; }
  read -r wall user sys ref < "$BUILD/.clean-build-time"
  echo "clean build: ${wall} s wall, $(python3 -c "print(round($user + $sys, 1))") s CPU (user ${user} + sys ${sys}) on ${JOBS} cores, reference compile ${ref} s CPU, load $(cut -d' ' -f1-3 /proc/loadavg)"
fi
[ -f "$BUILD/.ninja_log" ] || { echo "build-profile: no $BUILD/.ninja_log (build first, or --clean)" >&2; exit 1; }
python3 - "$BUILD" <<'PYEOF'
import os, re, subprocess, sys, tempfile, time
build = sys.argv[1]
# .ninja_log v5: start_ms end_ms mtime output hash; the last entry of an output wins.
last = {}
for line in open(os.path.join(build, ".ninja_log")):
    if line.startswith("#"):
        continue
    f = line.rstrip("\n").split("\t")
    if len(f) >= 4:
        last[f[3]] = (int(f[1]) - int(f[0])) / 1000.0
objs = {k: v for k, v in last.items() if k.endswith(".o")}
links = {k: v for k, v in last.items() if not k.endswith((".o", ".a")) and v > 0.2}
print(f"edges {len(last)}: {sum(last.values()):.0f} s summed "
      f"({sum(objs.values()):.0f} s compiling {len(objs)} objects, "
      f"{sum(links.values()):.0f} s in {len(links)} links and other steps)")
print("\n20 slowest translation units (s):")
for k, v in sorted(objs.items(), key=lambda kv: -kv[1])[:20]:
    # A unity batch (Unity/unity_N_cxx.cxx) is named with its target.
    src = re.sub(r"^.*CMakeFiles/([^/]*)\.dir/", r"\1: ", k)[:-2]
    print(f"  {v:6.1f}  {src}")
print("\nlinks and other steps over 0.2 s (s):")
for k, v in sorted(links.items(), key=lambda kv: -kv[1])[:25]:
    print(f"  {v:6.1f}  {k}")
# Headers by how many objects include them (ninja's deps log).
deps = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True).stdout
count = {}
for line in deps.splitlines():
    if line.startswith("    "):
        h = line.strip()
        if h.endswith((".h", ".hpp")) or "/c++/" in h:
            count[h] = count.get(h, 0) + 1
top = sorted(count.items(), key=lambda kv: -kv[1])
def cost(h):
    # What parsing the header alone costs (-fsyntax-only, C++20, the build's flags).
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as f:
        f.write(f'#include "{h}"\n')
    t = time.time()
    r = subprocess.run(["c++", "-std=c++20", "-fsyntax-only", "-I.", "-I/usr/include/hdf5/serial",
                        "-DFMT_SHARED", f.name], capture_output=True)
    os.unlink(f.name)
    return time.time() - t if r.returncode == 0 else float("nan")
print("\nheaders included most often: objects, parse time alone, objects x time (s):")
shown = 0
# Third-party headers by their entry point only (not every header they pull in).
heavy = ("nlohmann/json.hpp", "nlohmann/json_fwd.hpp", "CLI/CLI.hpp", "toml++/toml.h",
         "fmt/format.h", "spdlog/spdlog.h", "gtest/gtest.h", "gmock/gmock.h",
         "benchmark/benchmark.h", "H5Cpp.h")
here = os.getcwd() + "/"
for h, n in top:
    if not (h.endswith(heavy) or h.startswith(here)
            or h.startswith(("engine/", "harness/", "sim/", "workloads/", "traces/"))):
        continue
    c = cost(h)
    print(f"  {n:4d}  {c:5.2f}  {n * c:7.1f}  {h.replace(here, '')}")
    shown += 1
    if shown == 20:
        break
PYEOF
