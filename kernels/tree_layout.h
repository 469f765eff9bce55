// EAGLE-2's grown trees laid out for verification as one operator (vispec::tree_layout): one CUDA block per row
// (kernels/tree_layout.cu), kernels/tree_layout_body.h the one body of both backends, which only compares and
// counts, so its outputs are the composite formulas' exactly. The composite is decoding/common/draft_tree.cpp's,
// which chooses between them.
#pragma once

#include <cstdint>
#include <tuple>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// EAGLE-2's grown trees laid out for verification (decoding/common/draft_tree.h: grow_dynamic_trees' rerank and
// grown_tree_tables) for every row at once. The
// candidates score [B, C] float64, parent and token [B, C] int64, C = top_k + depth top_k^2 in level order;
// nodes [B] the candidates each row keeps at most; roots, root_index [B] each row's root token and raster index.
// Returns (keep [B, C] bool, token, depth, positions [B, T] int64, mask [B, T, T] bool, children [B, T, top_k]
// int64): the kept candidates, then TreeInputs' and TreeTables' fields padded to T nodes, positions at most
// cells - 1.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> tree_layout(
    const at::Tensor& score, const at::Tensor& parent, const at::Tensor& token, const at::Tensor& nodes,
    const at::Tensor& roots, const at::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T, int64_t cells);

}  // namespace vispec::kernels
