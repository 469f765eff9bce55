// Classifier-free guidance's mix in one operator (vispec::cfg_mix). Where the fused operators run
// (kernels/kernel_check.h's use_fused) the operator computes it (CPU reference: kernels/cfg_mix.cpp; CUDA:
// kernels/cfg_mix.cu), elsewhere the composite formula, with the same bits.
#pragma once

namespace at {
class Tensor;
}

namespace vispec::kernels {

// logits [2B, ...] laid out [cond; uncond] (float32, bfloat16 or float16) -> float32 [B, ...]: u + scale (c - u)
// with c and u in float32 and the scale rounded to float32.
at::Tensor cfg_mix(const at::Tensor& logits, double scale);

}  // namespace vispec::kernels
