// What the CPU and CUDA implementations of vispec::tree_layout and vispec::grow_level (kernels/fused_ops.h) share:
// the checks of their inputs, the layout's outputs and scratch made on the inputs' device, and the bodies'
// arguments pointing at them (kernels/tree_layout_body.h, kernels/tree_growth_body.h). Included only by the two
// implementations.
#pragma once

#include <torch/torch.h>

#include <tuple>

#include "kernels/tree_growth_body.h"
#include "kernels/tree_layout_body.h"

namespace vispec::kernels {

struct TreeLayoutCall {
  int64_t B = 0;
  torch::Tensor score, parent, token, nodes, roots, root_index;  // contiguous
  torch::Tensor keep, node_of, node_parent, tok, depth, pos, mask, children;
  layout::Args args;

  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> outputs() const {
    return {keep, tok, depth, pos, mask, children};
  }
};

// Checks the op's inputs (one message per mistake), makes its outputs and scratch and points args at them.
TreeLayoutCall prepare_tree_layout(const torch::Tensor& score, const torch::Tensor& parent, const torch::Tensor& token,
                                   const torch::Tensor& nodes, const torch::Tensor& roots,
                                   const torch::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T,
                                   int64_t cells);

struct GrowLevelCall {
  int64_t B = 0;
  torch::Tensor lp, idx, own;  // contiguous
  growth::Args<float> f32;     // lp float32
  growth::Args<double> f64;    // lp float64
  bool double_lp = false;
};

// Checks grow_level's inputs and buffers (the buffers contiguous: they are written in place) and points the
// body's arguments at them.
GrowLevelCall prepare_grow_level(const torch::Tensor& lp, const torch::Tensor& idx, const torch::Tensor& own,
                                 const torch::Tensor& score, const torch::Tensor& cand_token,
                                 const torch::Tensor& cand_parent, const torch::Tensor& cand_score,
                                 const torch::Tensor& frontier, const torch::Tensor& tokens,
                                 const torch::Tensor& parent_slot, const torch::Tensor& mask, int64_t level);

}  // namespace vispec::kernels
