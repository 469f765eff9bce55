// SwiGLU's middle as one operator (vispec::silu_mul): silu(gate) * up over one merged projection
// gate_up [..., 2F] = [w1 x | w3 x] -> [..., F]. Where the fused operators run (kernels/kernel_check.h's use_fused)
// the operator computes it (CPU reference: kernels/silu_mul.cpp; CUDA: kernels/silu_mul.cu), elsewhere the
// composite formula.
#pragma once

namespace at {
class Tensor;
}

namespace vispec::kernels {

// T(T(silu(gate)) * up) in float32 steps, gate and up the halves of gate_up's last dimension.
at::Tensor silu_mul(const at::Tensor& gate_up);

}  // namespace vispec::kernels
