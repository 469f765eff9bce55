// VQ image tokenizer in LlamaGen's style (tokenizer/tokenizer_image/vq_model.py; docs/algorithms.md "The model"):
// conv encoder -> quant_conv -> nearest code under L2-normalised codes and latents -> post_quant_conv -> conv
// decoder. Module names match LlamaGen's state dict, so its VQ-16 checkpoint loads with the matching config.
// With kind movq the decoder is Emu3's MoVQ (models/vq/movq.h), and there is no encoder.
#pragma once

#include <torch/torch.h>

#include <string>

#include "models/vq/movq.h"
#include "models/vq/vq_config.h"

namespace vispec {

struct ResnetBlockImpl : torch::nn::Module {
  ResnetBlockImpl(int64_t in, int64_t out, int64_t groups);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::GroupNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, nin_shortcut{nullptr};
};
TORCH_MODULE(ResnetBlock);

// Single-head self-attention over all H*W positions.
struct AttnBlockImpl : torch::nn::Module {
  AttnBlockImpl(int64_t ch, int64_t groups);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::GroupNorm norm{nullptr};
  torch::nn::Conv2d q{nullptr}, k{nullptr}, v{nullptr}, proj_out{nullptr};
};
TORCH_MODULE(AttnBlock);

// One resolution level: res blocks, optional attention after each, then an optional resample conv.
struct VqLevelImpl : torch::nn::Module {
  VqLevelImpl(int64_t in, int64_t out, int64_t n_res, bool attn, int resample /* -1 down, 0 none, +1 up */,
              int64_t groups);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::ModuleList res{nullptr}, attn{nullptr};
  torch::nn::Sequential downsample{nullptr}, upsample{nullptr};  // hold one module named "conv"
};
TORCH_MODULE(VqLevel);

struct VqCoderImpl : torch::nn::Module {
  // encoder=true: image -> z_channels latent; false: z_channels latent -> image.
  VqCoderImpl(const VqConfig& c, bool encoder);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Conv2d conv_in{nullptr}, conv_out{nullptr};
  torch::nn::ModuleList conv_blocks{nullptr}, mid{nullptr};
  torch::nn::GroupNorm norm_out{nullptr};

 private:
  bool is_encoder_;
};
TORCH_MODULE(VqCoder);

struct VqCodebookImpl : torch::nn::Module {
  VqCodebookImpl(int64_t size, int64_t dim);
  torch::nn::Embedding embedding{nullptr};
};
TORCH_MODULE(VqCodebook);

struct VqTrainOutput {
  torch::Tensor recon;                       // [B, C, H, W]
  torch::Tensor codebook_loss, commit_loss;  // scalars (commit already weighted by beta)
  torch::Tensor codes;                       // [B, h*w]
};

class VqModelImpl : public torch::nn::Module {
 public:
  explicit VqModelImpl(const VqConfig& config);
  const VqConfig& config() const { return config_; }

  torch::Tensor encode(const torch::Tensor& images);  // [B, C, H, W] in [-1, 1] -> codes [B, h*w] raster
  // codes [B, h*w] -> images [B, C, h*ds, w*ds], roughly in [-1, 1] (not clamped, as in LlamaGen).
  torch::Tensor decode_codes(const torch::Tensor& codes, int64_t h, int64_t w);
  // codes [B, h*w] -> their code vectors [B, E, h, w] (the lookup codebook's rows).
  torch::Tensor code_vectors(const torch::Tensor& codes, int64_t h, int64_t w);
  // Any latent [B, E, h, w] (code vectors or a network's estimate of them) -> images, differentiably.
  torch::Tensor decode_latent(const torch::Tensor& latent);
  // latent [B, E, h, w] -> (the latent as looked up, L2-normalised if configured, [B*h*w, E]; codes [B, h*w]).
  std::pair<torch::Tensor, torch::Tensor> nearest(const torch::Tensor& latent);
  // The L2-normalised (if configured) codebook [K, E], as used for lookup. Neighbour tables read this.
  torch::Tensor codebook();
  VqTrainOutput forward_train(const torch::Tensor& images);

  VqCoder encoder{nullptr}, decoder{nullptr};
  torch::nn::Conv2d quant_conv{nullptr}, post_quant_conv{nullptr};
  VqCodebook quantize{nullptr};
  // Emu3's MoVQ (config kind movq) in place of the decoder and post_quant_conv above, under their names.
  MovqDecoder movq_decoder{nullptr};
  CausalConv3d movq_post_quant_conv{nullptr};

 private:
  void check_has_encoder() const;
  VqConfig config_;
};
TORCH_MODULE(VqModel);

// Tokens of a whole image set [N, C, H, W] (any device -> the VQ's), as int32 [N, h*w] on the CPU. Batches of
// 64: on CPU, larger ones spend more on im2col buffers than on the convolutions. Logs progress. weights: the
// VQ's file, which a non-finite latent's one line names.
torch::Tensor tokenize_images(VqModel& vq, const torch::Tensor& images, const std::string& weights);

}  // namespace vispec
