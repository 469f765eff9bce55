// A draft's distribution and its draw in one operator (vispec::softmax_draw): what SD's drafter does per draft
// (decoding/sd.cpp). As a chain of ATen operators it is the non-finite watch, the softmax (after a temperature
// other than 1), and decoding/common/sampler.h's inverse-CDF draw (a cast, the cumulative sum, the target u times
// the total, the search, the clamp): seven kernels a draft. Its CPU reference (kernels/softmax_draw.cpp) is that
// chain inside one operator, with its bits; its CUDA kernel (kernels/softmax_draw.cu) is one block per row.
#pragma once

#include <tuple>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// logits [B, V] float32, uniforms u [B] float64 (any stride), temperature > 0, a sampler without top-k and top-p
// -> (probs [B, V] float32: softmax(logits / temperature), a temperature of 1 dividing nothing; tokens [B] int64:
// the first index whose float64 CDF exceeds u times the total). Any non-finite logit ORs true into the 0-dim bool
// `nonfinite` (the samplers' watch).
std::tuple<at::Tensor, at::Tensor> softmax_draw(const at::Tensor& logits, const at::Tensor& u, double temperature,
                                                const at::Tensor& nonfinite);

}  // namespace vispec::kernels
