// SSD's spatial draft heads (the SSD paper, Eq. 2; docs/algorithms.md "SSD"): one small predictor per (direction,
// offset) that maps the target's state at a grid cell to its state `offset` cells later in raster order.
//
//   z            = [h_pre(y, x); e(token(y, x))]     h_pre: the target's last hidden state BEFORE its final
//                                                   norm, at the position whose logits gave token(y, x)
//   f(z)         = W0 z + SwiGLU(RMSNorm(W0 z))      W0: 2d -> d; SwiGLU(u) = W2 (silu(W1 u) * W3 u), no biases
//   h^(y, x + k) = f_horizontal[k-1](z)    k = 1 .. kh   (same row only)
//   h^(y + k, x) = f_vertical[k-1](z)      k = 1 .. kv   (offset k * W in raster order)
//   draft token  = argmax target->image_logits(target->norm(h^))
// SwiGLU width m = 2d: the paper gives 134M parameters per head at d = 4096, which is 2d^2 (W0) + 3 d m
// with m = 2d (our inference; the paper does not name m).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "models/gpt/gpt.h"
#include "models/model_config.h"

namespace vispec {

struct SsdHeadImpl : torch::nn::Module {
  SsdHeadImpl(int64_t dim, int64_t hidden, double eps);
  torch::Tensor forward(const torch::Tensor& h_pre, const torch::Tensor& token_embedding);
  torch::nn::Linear w0{nullptr}, w1{nullptr}, w2{nullptr}, w3{nullptr};
  RMSNorm norm{nullptr};
};
TORCH_MODULE(SsdHead);

class SsdHeadsImpl : public torch::nn::Module {
 public:
  SsdHeadsImpl(const GptConfig& target, int64_t horizontal, int64_t vertical);

  int64_t horizontal_count() const { return kh_; }
  int64_t vertical_count() const { return kv_; }
  int64_t count() const { return kh_ + kv_; }
  // Head i: horizontal heads first (offsets 1 .. kh), then vertical (W, 2W, ...).
  int64_t raster_offset(int64_t i) const;
  bool is_vertical(int64_t i) const { return i >= kh_; }
  std::string head_name(int64_t i) const;  // "h+1", ..., "v+1" (rows below)
  SsdHead head(int64_t i) const;

  torch::nn::ModuleList horizontal{nullptr}, vertical{nullptr};

 private:
  int64_t kh_, kv_, grid_;
};
TORCH_MODULE(SsdHeads);

// Reads a file written by `vispec train ssd-heads` (head counts from its metadata), checked against the target.
SsdHeads load_ssd_heads(const std::string& path, const ModelConfig& target);

}  // namespace vispec
