// One step of EAGLE-2's tree growth as one operator (vispec::grow_level): one CUDA block per row
// (kernels/grow_level.cu), kernels/grow_level_body.h the one body of both backends, with the composite formulas'
// outputs exactly. The composite is decoding/common/draft_tree.cpp's, which chooses between them.
#pragma once

#include <cstdint>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// One step of EAGLE-2's tree growth (decoding/common/draft_tree.h's grow_dynamic_trees) for every row at once, in
// place in the growth's buffers (kernels/tree_growth_body.h says what each holds): level -1 starts them from the
// root's top-K log-probs lp and tokens idx [B, K]; level l >= 0 scores the children of level l's frontier (lp,
// idx [B, K, K]: the drafter's top K under each frontier node; lp float32 or float64) and picks the next
// frontier. own [B, 3] int64: each row's top_k, depth and nodes.
void grow_level(const at::Tensor& lp, const at::Tensor& idx, const at::Tensor& own, const at::Tensor& score,
                const at::Tensor& cand_token, const at::Tensor& cand_parent, const at::Tensor& cand_score,
                const at::Tensor& frontier, const at::Tensor& tokens, const at::Tensor& parent_slot,
                const at::Tensor& mask, int64_t level);

}  // namespace vispec::kernels
