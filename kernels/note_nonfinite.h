// The samplers' non-finite watch in one operator (vispec::note_nonfinite): one pass where the composite formula
// (isfinite, logical_not, any, logical_or_) is four kernels. Where the fused operators run
// (kernels/kernel_check.h's use_fused) the operator (CPU reference: kernels/note_nonfinite.cpp; CUDA:
// kernels/note_nonfinite.cu), elsewhere the composite formula.
#pragma once

namespace at {
class Tensor;
}

namespace vispec::kernels {

// ORs true into the 0-dim bool `flag` (on x's device) where any value of x (a floating dtype) is NaN or
// infinite, and leaves it as it is otherwise.
void note_nonfinite(const at::Tensor& x, const at::Tensor& flag);

}  // namespace vispec::kernels
