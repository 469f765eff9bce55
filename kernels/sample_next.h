// The sampling chain of decoding/common/sampler.h for one step in one operator (vispec::sample_next): one pass
// per row, temperature -> top-k -> top-p -> softmax -> the inverse-CDF draw. Its CPU reference is
// kernels/sample_next.cpp, its CUDA kernel kernels/sample_next.cu. The composite chain is the sampler itself
// (decoding/common/sampler.cpp's next_tokens chooses between them).
#pragma once

#include <cstdint>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// logits [B, V] float32 (CFG already mixed), uniforms u [B] float64 (float64 CDF) -> tokens [B] int64;
// temperature 0 takes the argmax. Any non-finite logit ORs true into the 0-dim bool `nonfinite` (the samplers'
// watch).
at::Tensor sample_next(const at::Tensor& logits, const at::Tensor& u, double temperature, int64_t top_k, double top_p,
                       const at::Tensor& nonfinite);

}  // namespace vispec::kernels
