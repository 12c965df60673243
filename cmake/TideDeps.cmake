# Finds tide's dependencies (all Debian packages; see scripts/install-deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
pkg_check_modules(TOMLPP REQUIRED IMPORTED_TARGET tomlplusplus)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
find_package(HDF5 REQUIRED COMPONENTS C CXX)

set(TIDE_BACKENDS "")
set(TIDE_BACKEND_NOTES "")
if(TIDE_WITH_TCP)
  list(APPEND TIDE_BACKENDS tcp)
endif()
if(TIDE_WITH_SHM)
  list(APPEND TIDE_BACKENDS shm)
endif()

# tide_optional(NAME FOUND REASON): resolves an AUTO/ON/OFF option.
function(tide_optional name found reason)
  set(opt TIDE_WITH_${name})
  if("${${opt}}" STREQUAL "OFF")
    set(TIDE_HAVE_${name} OFF PARENT_SCOPE)
    list(APPEND TIDE_BACKEND_NOTES "${name}: off (${opt}=OFF)")
  elseif(found)
    set(TIDE_HAVE_${name} ON PARENT_SCOPE)
  elseif("${${opt}}" STREQUAL "ON")
    message(FATAL_ERROR "${opt}=ON but ${reason}")
  else()
    set(TIDE_HAVE_${name} OFF PARENT_SCOPE)
    list(APPEND TIDE_BACKEND_NOTES "${name}: not built: ${reason}")
  endif()
  set(TIDE_BACKEND_NOTES "${TIDE_BACKEND_NOTES}" PARENT_SCOPE)
endfunction()

pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
pkg_check_modules(RDMACM IMPORTED_TARGET librdmacm)
if(IBVERBS_FOUND AND RDMACM_FOUND)
  tide_optional(RDMA ON "")
else()
  tide_optional(RDMA OFF "libibverbs-dev/librdmacm-dev not found")
endif()
if(TIDE_HAVE_RDMA)
  list(APPEND TIDE_BACKENDS rdma)
endif()

find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  tide_optional(CUDA ON "")
else()
  tide_optional(CUDA OFF "CUDA toolkit not found")
endif()

# The GPU layer (engine/gpu) compiles a few kernels with nvcc: device code
# for the architectures in CMAKE_CUDA_ARCHITECTURES or $CUDAARCHS (default 90, the H100/H200
# class; one architecture keeps nvcc's compile time short), warnings as errors
# as for C++, and no FMA contraction (--fmad=false) so the generator's and the
# quantizer's float expressions round exactly as on the host.
if(TIDE_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)  # what CMake 3.25 knows for nvcc; the kernels need no more
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:--fmad=false;-Werror=all-warnings;-Xcompiler=-Wall,-Wextra,-Werror>")
endif()

set(_nccl_found OFF)
if(TIDE_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(_nccl_found ON)
  endif()
endif()
tide_optional(NCCL ${_nccl_found} "CUDA toolkit or nccl.h/libnccl not found")
if(TIDE_HAVE_NCCL)
  list(APPEND TIDE_BACKENDS nccl)
endif()

pkg_check_modules(URING IMPORTED_TARGET liburing)
tide_optional(URING "${URING_FOUND}" "liburing-dev not found")



