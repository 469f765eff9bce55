// SwiGLU's gate on one value, the arithmetic of vispec::silu_mul on CUDA: T(T(silu(gate)) * up), silu(a) =
// a / (1 + e^-a) in float32 with the e^x of kernels/exp_f32.h. Written once for the two kernels that apply it
// (silu_mul's, and linear_silu_mul's epilogue in kernels/linear.cu), so that they give the same bits.
#pragma once

#include "kernels/exp_f32.h"
#include "kernels/packed.cuh"

namespace vispec::kernels::cuda {

// gate and up as read from (or rounded to) T.
template <typename T>
__device__ __forceinline__ T silu_gate(float gate, float up) {
  const float silu = rounded<T>(__fdiv_rn(gate, __fadd_rn(1.0f, exp_f32(-gate))));
  return from_float<T>(__fmul_rn(silu, up));
}

}  // namespace vispec::kernels::cuda
