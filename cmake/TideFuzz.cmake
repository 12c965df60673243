# libFuzzer targets that run for a bounded time in ctest, whatever compiler
# builds the project.
#
#   include(${PROJECT_SOURCE_DIR}/cmake/TideFuzz.cmake)
#   tide_fuzzer(fuzz_x SOURCES fuzz_x.cc LIBS tide_traces [SEEDS seeds/fuzz_x] [SECONDS 20])
#
# libFuzzer needs clang (-fsanitize=fuzzer), and coverage feedback needs the
# libraries under test instrumented too, so objects cannot be mixed with a
# GCC build. The fuzzers therefore live in a separate clang build of this
# same project in <build>/fuzz, configured with TIDE_FUZZ_BUILD=ON (every
# library compiled with -fsanitize=fuzzer-no-link,address,undefined); only
# the `tide_fuzzers` target is built there, i.e. the fuzzers and the
# libraries they link. The main build drives it:
#   * target `tide_fuzz_build` (in ALL): configures the sub-build once and
#     builds it incrementally; a failure there is a warning, not a broken
#     main build, and shows up as the failing `fuzz_build` test;
#   * test `fuzz_build` (fixture `tide_fuzz`): the same build, strict;
#   * one test per fuzzer (label `fuzz`): runs it for SECONDS (default
#     TIDE_FUZZ_SECONDS) on the seeds plus a corpus kept in the build dir.
# Without clang++ and libFuzzer (or with TIDE_FUZZ_TESTS=OFF) every fuzzer
# test reports "skipped: <reason>".
include_guard(GLOBAL)

set(TIDE_FUZZ_TESTS AUTO CACHE STRING "libFuzzer tests in ctest (clang sub-build): AUTO, ON or OFF")
set(TIDE_FUZZ_SECONDS 20 CACHE STRING "seconds each fuzzer runs in ctest")
# Where the clang sub-build lives (a function, not a variable: include_guard
# keeps this file's variables in the first directory that includes it).
function(_tide_fuzz_dir out)
  set(${out} ${CMAKE_BINARY_DIR}/fuzz PARENT_SCOPE)
endfunction()

# Probes clang once per configure; records why fuzzers cannot run, if so.
function(_tide_fuzz_probe)
  get_property(done GLOBAL PROPERTY TIDE_FUZZ_PROBED)
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY TIDE_FUZZ_PROBED ON)
  set(reason "")
  if(TIDE_FUZZ_TESTS STREQUAL "OFF")
    set(reason "TIDE_FUZZ_TESTS=OFF")
  else()
    find_program(TIDE_FUZZ_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
    find_program(TIDE_FUZZ_CLANG NAMES clang clang-16 clang-15 clang-14)
    if(NOT TIDE_FUZZ_CLANGXX OR NOT TIDE_FUZZ_CLANG)
      set(reason "clang/clang++ not found (scripts/install-deps.sh installs clang)")
    else()
      set(probe ${CMAKE_BINARY_DIR}/CMakeFiles/tide_fuzz_probe)
      file(MAKE_DIRECTORY ${probe})
      file(WRITE ${probe}/probe.cc
           "#include <cstddef>\n#include <cstdint>\n"
           "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
      execute_process(
        COMMAND ${TIDE_FUZZ_CLANGXX} -fsanitize=fuzzer,address,undefined ${probe}/probe.cc
                -o ${probe}/probe
        RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
      if(NOT rc EQUAL 0)
        set(reason "${TIDE_FUZZ_CLANGXX} cannot link -fsanitize=fuzzer (libFuzzer missing)")
      endif()
    endif()
  endif()
  if(reason AND TIDE_FUZZ_TESTS STREQUAL "ON")
    message(FATAL_ERROR "TIDE_FUZZ_TESTS=ON but ${reason}")
  endif()
  set_property(GLOBAL PROPERTY TIDE_FUZZ_SKIP_REASON "${reason}")
  if(reason)
    message(STATUS "fuzzers: skipped (${reason})")
    return()
  endif()
  _tide_fuzz_dir(fuzzdir)
  message(STATUS "fuzzers: clang sub-build in ${fuzzdir} (${TIDE_FUZZ_CLANGXX})")
  set(args -DSRC=${PROJECT_SOURCE_DIR} -DBIN=${fuzzdir} -DCC=${TIDE_FUZZ_CLANG}
           -DCXX=${TIDE_FUZZ_CLANGXX} -DGEN=${CMAKE_GENERATOR})
  add_custom_target(tide_fuzz_build ALL
    COMMAND ${CMAKE_COMMAND} ${args} -DTOLERANT=ON -P ${PROJECT_SOURCE_DIR}/cmake/tide_fuzz_build.cmake
    COMMENT "Building the libFuzzer targets (clang sub-build)" USES_TERMINAL VERBATIM)
  add_test(NAME fuzz_build
           COMMAND ${CMAKE_COMMAND} ${args} -P ${PROJECT_SOURCE_DIR}/cmake/tide_fuzz_build.cmake)
  set_tests_properties(fuzz_build PROPERTIES FIXTURES_SETUP tide_fuzz LABELS fuzz TIMEOUT 1200)
endfunction()

function(tide_fuzzer name)
  cmake_parse_arguments(F "" "SEEDS;SECONDS" "SOURCES;LIBS" ${ARGN})
  if(TIDE_FUZZ_BUILD)
    # Inside the clang sub-build: the fuzzer itself.
    add_executable(${name} ${F_SOURCES})
    target_link_libraries(${name} PRIVATE ${F_LIBS})
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzzers)
    if(NOT TARGET tide_fuzzers)
      add_custom_target(tide_fuzzers)
    endif()
    add_dependencies(tide_fuzzers ${name})
    return()
  endif()
  _tide_fuzz_probe()
  get_property(reason GLOBAL PROPERTY TIDE_FUZZ_SKIP_REASON)
  if(reason)
    add_test(NAME ${name} COMMAND sh -c "echo 'skipped: ${reason}'; exit 77")
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS fuzz)
    return()
  endif()
  if(NOT F_SECONDS)
    set(F_SECONDS ${TIDE_FUZZ_SECONDS})
  endif()
  _tide_fuzz_dir(fuzzdir)
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus)
  file(MAKE_DIRECTORY ${corpus})
  set(dirs ${corpus})
  if(F_SEEDS)
    get_filename_component(seeds ${F_SEEDS} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND dirs ${seeds})
  endif()
  # Leaks are not what these look for (HDF5 keeps global state); UB is fatal.
  # A huge malloc returns NULL, as it does outside ASan (HDF5 then fails cleanly).
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -E env
                   ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:allocator_may_return_null=1
                   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
                   ${fuzzdir}/fuzzers/${name} -max_total_time=${F_SECONDS} -timeout=20
                   -rss_limit_mb=2048 -print_final_stats=1
                   -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/${name}- ${dirs})
  math(EXPR limit "${F_SECONDS} + 120")
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED tide_fuzz LABELS fuzz TIMEOUT ${limit})
endfunction()
