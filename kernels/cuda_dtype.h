// The activations' dtype as the CUDA launchers take it: they include no LibTorch header, so a binding
// (kernels/operator.h's dtype_code) names a tensor's dtype by this code.
#pragma once

namespace vispec::kernels::cuda {

enum class Dtype : int { f32 = 0, bf16 = 1, f16 = 2 };

}  // namespace vispec::kernels::cuda
