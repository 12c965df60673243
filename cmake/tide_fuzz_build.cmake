# cmake -DSRC=<source> -DBIN=<build>/fuzz -DCC=clang -DCXX=clang++ -DGEN=<generator>
#       [-DTOLERANT=ON] -P tide_fuzz_build.cmake
# Configures (once) and builds the clang sub-build of the libFuzzer targets
# (see TideFuzz.cmake). TOLERANT turns a failure into a warning.
function(fail msg)
  if(TOLERANT)
    message(WARNING "fuzzers: ${msg}; the fuzz_build test will fail")
  else()
    message(FATAL_ERROR "fuzzers: ${msg}")
  endif()
endfunction()

set(san "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer")
if(NOT EXISTS ${BIN}/CMakeCache.txt)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN} -G ${GEN} -DCMAKE_BUILD_TYPE=Debug
            -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1
            -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${CXX}
            "-DCMAKE_C_FLAGS=-O1 ${san} -fsanitize=fuzzer-no-link"
            "-DCMAKE_CXX_FLAGS=-O1 ${san} -fsanitize=fuzzer-no-link"
            "-DCMAKE_EXE_LINKER_FLAGS=${san}" "-DCMAKE_SHARED_LINKER_FLAGS=${san}"
            -DTIDE_FUZZ_BUILD=ON -DTIDE_FUZZ_TESTS=OFF -DTIDE_WITH_CUDA=OFF -DTIDE_WITH_NCCL=OFF
            -DTIDE_WITH_RDMA=OFF -DTIDE_WITH_URING=OFF -DTIDE_WITH_PYTHON=OFF
    RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    file(REMOVE ${BIN}/CMakeCache.txt)
    fail("configuring ${BIN} failed")
    return()
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} --target tide_fuzzers RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  fail("building ${BIN} failed")
endif()
