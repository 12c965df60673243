# The two commands a newcomer needs: `make test` and `make reproduce`.
# Both install missing Debian packages first (scripts/install-deps.sh).

PRESET ?= default
BUILD  ?= build
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build test unit reproduce clean format

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null || cmake --preset $(PRESET)

# A clean build is timed (scripts/timed-build.sh); make test holds its CPU
# seconds against results/budgets/build.toml.
build: configure
	@bash scripts/timed-build.sh $(BUILD) $(JOBS)

unit: build
	ctest --test-dir $(BUILD) -L unit -j $(JOBS) --output-on-failure

test: build
	@bash scripts/run-tests.sh $(BUILD)

# Only what the reproduction runs (the CLI, the codec benchmark and, where
# pybind11 is there, the Python module), not the tests and fuzzers: on 2
# cores that halves the first build.
reproduce: configure
	@cmake --build $(BUILD) -j $(JOBS) --target tide tide_bench_delta \
	  $$([ -d $(BUILD)/python/CMakeFiles/tide_python.dir ] && echo tide_python)
	@bash scripts/reproduce.sh $(BUILD)

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf build build-asan build-tsan
