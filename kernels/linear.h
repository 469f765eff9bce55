// A linear layer without bias, and SwiGLU's middle from its input, as one operator each (vispec::linear,
// vispec::linear_silu_mul). On CUDA for at most 4 rows a kernel of their own reads the weights at the memory
// bandwidth that cuBLAS's kernels for so few rows do not reach (kernels/linear.cu); elsewhere they are at::linear
// (and silu_mul after it). Where the fused operators do not run (kernels/kernel_check.h's use_fused), the
// composite formulas do.
#pragma once

namespace at {
class Tensor;
}

namespace vispec::kernels {

// x [..., K] times weight [N, K] transposed -> [..., N].
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight);

// silu_mul(linear(x, weight)), weight [2F, K] the merged [w1; w3] -> [..., F]: on CUDA for at most 4 rows one
// kernel computes both products and the gate, with the same bits as the two operators.
at::Tensor linear_silu_mul(const at::Tensor& x, const at::Tensor& weight);

}  // namespace vispec::kernels
