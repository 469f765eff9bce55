// Emu3's image tokenizer (MoVQ, BAAI's Emu3-VisionTokenizer), decoder side: codes -> images. Emu3 decodes an
// image as a video of temporal_downsample frames and keeps frame 0; the network:
//   code vectors zq [B, E, 1, h, w] -> post_quant_conv (causal 3D, time kernel 3) -> z
//   z and zq, stacked along the batch: time_res_stack (residual blocks of BatchNorm3d, swish, causal 3D convs),
//   then time_conv (x2 nearest upsampling in time, causal 3D conv, swish) log2(temporal_downsample) times
//   then frame by frame in 2D, every norm a spatial norm (GroupNorm of the features, scaled and shifted by 1x1
//   convs of zq resized to them, nearest): conv_in, mid (res block, attention, res block), the levels from
//   the lowest resolution up (num_res_blocks + 1 res blocks each, attention after each at the lowest level with
//   level_attention, x2 nearest upsampling and a conv between levels), norm_out, swish, conv_out.
// A causal 3D conv pads time with two frames of zeros in front, so frame 0 of every output depends on frame 0
// of its input alone: the 2D part runs on frame 0 only, which is the image (exact, and a quarter of the work).
// Module names are the release's (decoder.up.0 the highest resolution, decoder.mid.attn_1.q, ...): its
// model.safetensors loads with `names: emu3` (the encoder skipped).
#pragma once

#include <torch/torch.h>

#include "models/vq/vq_config.h"

namespace vispec {

// Conv3d with Emu3's causal padding: time (2, 0), space (k - 1) split with the extra pixel in front.
struct CausalConv3dImpl : torch::nn::Module {
  CausalConv3dImpl(int64_t in, int64_t out, int64_t time_kernel, int64_t space_kernel);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Conv3d conv{nullptr};
  std::vector<int64_t> padding;
};
TORCH_MODULE(CausalConv3d);

struct SpatialNormImpl : torch::nn::Module {
  SpatialNormImpl(int64_t channels, int64_t zq_channels, int64_t groups);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& zq);
  torch::nn::GroupNorm norm_layer{nullptr};
  torch::nn::Conv2d conv_y{nullptr}, conv_b{nullptr};
};
TORCH_MODULE(SpatialNorm);

struct MovqResBlockImpl : torch::nn::Module {
  MovqResBlockImpl(int64_t in, int64_t out, int64_t zq_channels, int64_t groups);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& zq);
  SpatialNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, nin_shortcut{nullptr};
};
TORCH_MODULE(MovqResBlock);

// Single-head self-attention over all positions, 1x1 convs for q, k, v and the output, scale C^-1/2.
struct MovqAttnImpl : torch::nn::Module {
  MovqAttnImpl(int64_t channels, int64_t zq_channels, int64_t groups);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& zq);
  SpatialNorm norm{nullptr};
  torch::nn::Conv2d q{nullptr}, k{nullptr}, v{nullptr}, proj_out{nullptr};
};
TORCH_MODULE(MovqAttn);

class MovqDecoderImpl : public torch::nn::Module {
 public:
  explicit MovqDecoderImpl(const VqConfig& c);
  // z [B, z_channels, 1, h, w] and zq [B, E, 1, h, w] -> frame 0 [B, out, h * ds, w * ds].
  torch::Tensor forward(const torch::Tensor& z, const torch::Tensor& zq);

 private:
  VqConfig config_;
  torch::nn::ModuleList time_res_stack{nullptr}, time_conv{nullptr}, up{nullptr};
  torch::nn::Conv2d conv_in{nullptr}, conv_out{nullptr};
  std::shared_ptr<torch::nn::Module> mid;
  MovqResBlock mid_block_1{nullptr}, mid_block_2{nullptr};
  MovqAttn mid_attn{nullptr};
  SpatialNorm norm_out{nullptr};
};
TORCH_MODULE(MovqDecoder);

}  // namespace vispec
