// MuLo-SD's learned resamplers (the MuLo-SD paper, §3.2 and supplementary "Implementation Details"): small conv nets
// with residual blocks and pixel shuffle that map a grid of VQ code vectors to a grid twice as fine (U_2) or
// half as fine (D_2). Every convolution is ROW-CAUSAL (it sees its own row and the rows above, never below),
// so a drafted row can be up-sampled before the rows below it exist and an accepted prefix down-sampled
// without its unfinished rows:
//   U_2: low-res row i  -> high-res rows 2i, 2i + 1 depend on low-res rows <= i
//   D_2: high-res rows 2i, 2i + 1 -> low-res row i depends on high-res rows <= 2i + 1
// Inputs and outputs are code vectors [B, E, h, w] (the VQ's lookup codebook); the nearest code of an output
// vector is the token. Trained by `vispec train mulo-resamplers` (MSE through the VQ decoder + commitment).
#pragma once

#include <torch/torch.h>

#include "models/drafters/mulo_config.h"

namespace vispec {

// A conv2d over [B, C, H, W] whose output row y sees input rows y - (k - 1) .. y only (zero padding above).
struct RowCausalConvImpl : torch::nn::Module {
  RowCausalConvImpl(int64_t in, int64_t out, int64_t kernel);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Conv2d conv{nullptr};
  int64_t kernel;
};
TORCH_MODULE(RowCausalConv);

// x + conv(silu(conv(silu(x)))), both convolutions row-causal.
struct RowCausalResBlockImpl : torch::nn::Module {
  RowCausalResBlockImpl(int64_t channels, int64_t kernel);
  torch::Tensor forward(const torch::Tensor& x);
  RowCausalConv conv1{nullptr}, conv2{nullptr};
};
TORCH_MODULE(RowCausalResBlock);

// direction +1: U_2 ([B, E, h, w] -> [B, E, 2h, 2w]); -1: D_2 ([B, E, 2h, 2w] -> [B, E, h, w]).
class MuloResamplerImpl : public torch::nn::Module {
 public:
  MuloResamplerImpl(const MuloResamplerConfig& config, int direction);
  torch::Tensor forward(const torch::Tensor& codes);
  bool up() const { return direction_ > 0; }

  RowCausalConv conv_in{nullptr}, conv_out{nullptr};
  torch::nn::ModuleList blocks{nullptr};

 private:
  int direction_;
};
TORCH_MODULE(MuloResampler);

// The low-resolution image MuLo-SD's drafter is trained on: 2 x 2 average pooling ([B, C, S, S] -> S / 2).
inline torch::Tensor half_resolution(const torch::Tensor& images) { return torch::avg_pool2d(images, 2); }

// The pair, as one weights file holds them (tensors "up.*" and "down.*").
struct MuloResamplersImpl : torch::nn::Module {
  explicit MuloResamplersImpl(const MuloResamplerConfig& config);
  MuloResampler up{nullptr}, down{nullptr};
};
TORCH_MODULE(MuloResamplers);

}  // namespace vispec
