#include "kernels/vector_loops.h"

#include "kernels/exp_f32.h"

namespace vispec::kernels::cpu {

__attribute__((target_clones("avx2", "default"))) void silu_f32(const float* __restrict gate, float* __restrict out,
                                                                int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = hd::div(gate[i], hd::add(1.0f, exp_f32(-gate[i])));
}

__attribute__((target_clones("avx2", "default"))) void multiply_f32(float* __restrict out, const float* __restrict by,
                                                                    int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = hd::mul(out[i], by[i]);
}

__attribute__((target_clones("avx2", "default"))) void cfg_mix_f32(const float* __restrict cond,
                                                                   const float* __restrict uncond, float scale,
                                                                   float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = hd::add(uncond[i], hd::mul(hd::sub(cond[i], uncond[i]), scale));
}

}  // namespace vispec::kernels::cpu
