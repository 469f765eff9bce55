// RMSNorm, and the residual add with the RMSNorm after it, as one operator each (vispec::rms_norm,
// vispec::add_rms_norm). Where the fused operators run (kernels/kernel_check.h's use_fused, for x and the weight)
// the operator computes it: on the CPU its reference (kernels/rms_norm.cpp: a loop per row, the sum of squares in
// double), on a GPU its kernel (kernels/rms_norm.cu). Elsewhere (a gradient recorded, a GPU whose kernels failed
// their check) the composite formula does: float32 statistics, rounded to x's dtype, times the weight.
#pragma once

#include <tuple>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// x * rsqrt(mean(x^2) + eps) in float32, rounded to x's dtype, then times weight (in x's dtype). x [..., D],
// weight [D].
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// (x + delta, rms_norm(x + delta)), the sum rounded to x's dtype first (what the unfused code computes).
// x, delta [..., D].
std::tuple<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                                                double eps);

}  // namespace vispec::kernels
