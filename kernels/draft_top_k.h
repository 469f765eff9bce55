// The drafter's guided log-probabilities at each tree node and their K largest, in one operator
// (vispec::draft_top_k): what EAGLE-2's tree growth reads of each level (decoding/common/draft_tree.h). As a chain of
// ATen operators it is CFG's mix, the non-finite watch, the softmax (after a temperature other than 1), its log and
// top-k: five kernels a level. Its CPU reference (kernels/draft_top_k.cpp) is that chain inside one operator, with
// its bits; its CUDA kernel (kernels/draft_top_k.cu) is one block per row.
#pragma once

#include <cstdint>
#include <tuple>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// logits [R, ..., V] float32: [cond; uncond] rows when guided (R = 2B, mixed as cfg_mix does), else R = B. The
// processed distribution of a sampler without top-k and top-p: log(softmax(mixed / temperature)) for a temperature
// above 0 (a temperature of 1 divides nothing), log_softmax(mixed) at temperature 0 (the guided logits' own
// log-probs, which a greedy run's trees rank by). Returns its K largest log-probs [B, ..., K] float32, descending,
// and their indices [B, ..., K] int64. Any non-finite mixed logit ORs true into the 0-dim bool `nonfinite` (the
// samplers' watch).
std::tuple<at::Tensor, at::Tensor> draft_top_k(const at::Tensor& logits, bool guided, double cfg_scale,
                                               double temperature, int64_t K, const at::Tensor& nonfinite);

}  // namespace vispec::kernels
