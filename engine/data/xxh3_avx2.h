#pragma once
// xxh3-64 compiled for AVX2; call only where the CPU has it (see hashPiece()).

#include <cstddef>
#include <cstdint>

namespace tide::data {

uint64_t xxh3Avx2(const void* data, size_t length);

}  // namespace tide::data
