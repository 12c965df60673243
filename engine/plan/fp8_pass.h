#pragma once
// Bytes an FP8 block-quantization kernel moves through a GPU's memory: the
// RL framework's kernel (one pass per tensor, a thread block per weight
// block) reads 2 B and writes 1 B per element, plus one FP32 scale per
// block of `block` x `block` elements (0: scales not counted).

namespace tide::plan {

inline double fp8PassBytes(double bf16Bytes, double block) {
  double scales = block > 0 ? bf16Bytes / 2 / (block * block) * 4 : 0;
  return bf16Bytes * 1.5 + scales;
}

}  // namespace tide::plan
