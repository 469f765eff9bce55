// EAGLE-1's draws without replacement as one operator (vispec::draw_without_replacement): one CUDA block per row of
// q (kernels/draws.cu), kernels/draws_body.h the one body of both backends. Its sums run in the tree walk's order,
// so a token may differ from the composite formula's (decoding/eagle1.cpp, which chooses between them) where a
// uniform falls within a rounding of a boundary.
#pragma once

#include <tuple>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// EAGLE-1's n draws without replacement from each row of q [B, M, V] (probabilities, float32 or float64) by
// inverse CDF with the uniforms u [B, M, n] float64 (decoding/eagle1.h's draw_without_replacement): returns the
// tokens [B, M, n] int64 and each draw's conditional probability [B, M, n] float64.
std::tuple<at::Tensor, at::Tensor> draw_without_replacement(const at::Tensor& q, const at::Tensor& u);

}  // namespace vispec::kernels
