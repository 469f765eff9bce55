// What the CPU and CUDA implementations of vispec::tree_layout (kernels/fused_ops.h) share: the checks of its
// inputs, its outputs and scratch made on the inputs' device, and the body's arguments pointing at them
// (kernels/tree_layout_body.h). Included only by the two implementations.
#pragma once

#include <torch/torch.h>

#include <tuple>

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

}  // namespace vispec::kernels
