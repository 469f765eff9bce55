// What the CPU and CUDA implementations of vispec::draw_without_replacement (kernels/fused_ops.h) share: the
// checks of its inputs, its outputs and scratch made on q's device, and the body's arguments pointing at them
// (kernels/draws_body.h). Included only by the two implementations.
#pragma once

#include <torch/torch.h>

#include "kernels/draws_body.h"

namespace vispec::kernels {

struct DrawsCall {
  int64_t rows = 0;  // B M
  torch::Tensor q, u, left, tokens, probs;
  draws::Args<float> f32;   // q float32
  draws::Args<double> f64;  // q float64
  bool double_q = false;
};

DrawsCall prepare_draws(const torch::Tensor& q, const torch::Tensor& u);

}  // namespace vispec::kernels
