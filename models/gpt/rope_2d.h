// LlamaGen's 2D rotary position embedding (docs/algorithms.md "The model").
//
// head_dim/2 interleaved pairs (x[2j], x[2j+1]); the first head_dim/4 pairs rotate by the image row, the last
// head_dim/4 by the column, with frequency base^(-4i/head_dim). Condition positions get an ALL-ZERO row
// (cos = sin = 0, so their q and k become exactly 0): LlamaGen trained that way, so we reproduce it.
#pragma once

#include <torch/torch.h>

namespace vispec {

// [cls_token_num + grid^2, head_dim/2, 2] float32 (cos, sin), indexed by sequence position.
torch::Tensor rope_2d_table(int64_t grid_size, int64_t head_dim, double base, int64_t cls_token_num);

// x [B, T, H, Dh]; table_rows [B, T, Dh/2, 2] (the table gathered at each token's sequence position).
// Rotation in float32, result cast back to x's dtype.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& table_rows);

}  // namespace vispec
