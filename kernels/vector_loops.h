// Float loops of the fused operators' CPU references that must vectorize to keep pace with LibTorch's own
// CPU kernels (which are built for AVX2 and chosen at run time). Plain C++ over float arrays, no LibTorch:
// kernels/vector_loops.cpp is compiled on its own with -fno-trapping-math (so that GCC turns the branch-free
// selects of kernels/exp_f32.h into vector blends) and -ffp-contract=off (one rounding per operation, as the
// CUDA kernels make), and each loop is cloned for AVX2, the clone chosen when the program loads.
#pragma once

#include <cstdint>

namespace vispec::kernels::cpu {

// out[i] = silu(gate[i]) = gate[i] / (1 + e^-gate[i]), with kernels/exp_f32.h's e^x. The arrays do not overlap.
void silu_f32(const float* gate, float* out, int64_t n);
// out[i] = out[i] * by[i]. The arrays do not overlap.
void multiply_f32(float* out, const float* by, int64_t n);

// out[i] = uncond[i] + scale (cond[i] - uncond[i]): classifier-free guidance. The arrays do not overlap.
void cfg_mix_f32(const float* cond, const float* uncond, float scale, float* out, int64_t n);

}  // namespace vispec::kernels::cpu
