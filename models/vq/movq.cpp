#include "models/vq/movq.h"

#include "core/check.h"

namespace vispec {

namespace F = torch::nn::functional;

namespace {

torch::nn::Conv2d movq_conv(int64_t in, int64_t out, int64_t k) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k).padding(k / 2));
}

torch::Tensor movq_swish(const torch::Tensor& x) { return x * torch::sigmoid(x); }

// BatchNorm3d, swish, causal conv, twice, plus the input (the time axis's residual blocks).
struct MovqTemporalBlockImpl : torch::nn::Module {
  explicit MovqTemporalBlockImpl(int64_t channels) {
    norm1 = register_module("norm1", torch::nn::BatchNorm3d(channels));
    conv1 = register_module("conv1", CausalConv3d(channels, channels, 3, 3));
    norm2 = register_module("norm2", torch::nn::BatchNorm3d(channels));
    conv2 = register_module("conv2", CausalConv3d(channels, channels, 3, 3));
  }
  // Always with the running statistics: the tokenizer is frozen, whatever mode the module is in.
  static torch::Tensor frozen(const torch::nn::BatchNorm3d& n, const torch::Tensor& x) {
    return torch::batch_norm(x, n->weight, n->bias, n->running_mean, n->running_var, /*training=*/false, 0.0,
                             n->options.eps(), /*cudnn_enabled=*/true);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = conv1(movq_swish(frozen(norm1, x)));
    return x + conv2(movq_swish(frozen(norm2, h)));
  }
  torch::nn::BatchNorm3d norm1{nullptr}, norm2{nullptr};
  CausalConv3d conv1{nullptr}, conv2{nullptr};
};
TORCH_MODULE(MovqTemporalBlock);

// x2 nearest upsampling in time, then a causal conv.
struct MovqTemporalUpsampleImpl : torch::nn::Module {
  explicit MovqTemporalUpsampleImpl(int64_t channels) {
    conv = register_module("conv", CausalConv3d(channels, channels, 3, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) { return conv(x.repeat_interleave(2, /*dim=*/2)); }
  CausalConv3d conv{nullptr};
};
TORCH_MODULE(MovqTemporalUpsample);

// x2 nearest upsampling in space, then a 3x3 conv (a module holding `conv`, as the release names it).
struct MovqUpsampleImpl : torch::nn::Module {
  explicit MovqUpsampleImpl(int64_t channels) { conv = register_module("conv", movq_conv(channels, channels, 3)); }
  torch::Tensor forward(const torch::Tensor& x) {
    return conv(
        F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest)));
  }
  torch::nn::Conv2d conv{nullptr};
};
TORCH_MODULE(MovqUpsample);

}  // namespace

CausalConv3dImpl::CausalConv3dImpl(int64_t in, int64_t out, int64_t time_kernel, int64_t space_kernel) {
  conv = register_module(
      "conv", torch::nn::Conv3d(torch::nn::Conv3dOptions(in, out, {time_kernel, space_kernel, space_kernel})));
  const int64_t p = space_kernel - 1;  // F.pad's order: last dimension first
  padding = {p / 2 + p % 2, p / 2, p / 2 + p % 2, p / 2, 2, 0};
}

torch::Tensor CausalConv3dImpl::forward(const torch::Tensor& x) { return conv(F::pad(x, F::PadFuncOptions(padding))); }

SpatialNormImpl::SpatialNormImpl(int64_t channels, int64_t zq_channels, int64_t groups) {
  norm_layer =
      register_module("norm_layer", torch::nn::GroupNorm(torch::nn::GroupNormOptions(groups, channels).eps(1e-6)));
  conv_y = register_module("conv_y", movq_conv(zq_channels, channels, 1));
  conv_b = register_module("conv_b", movq_conv(zq_channels, channels, 1));
}

torch::Tensor SpatialNormImpl::forward(const torch::Tensor& x, const torch::Tensor& zq) {
  const auto q = F::interpolate(
      zq, F::InterpolateFuncOptions().size(std::vector<int64_t>{x.size(2), x.size(3)}).mode(torch::kNearest));
  return norm_layer(x) * conv_y(q) + conv_b(q);
}

MovqResBlockImpl::MovqResBlockImpl(int64_t in, int64_t out, int64_t zq_channels, int64_t groups) {
  norm1 = register_module("norm1", SpatialNorm(in, zq_channels, groups));
  conv1 = register_module("conv1", movq_conv(in, out, 3));
  norm2 = register_module("norm2", SpatialNorm(out, zq_channels, groups));
  conv2 = register_module("conv2", movq_conv(out, out, 3));
  if (in != out) nin_shortcut = register_module("nin_shortcut", movq_conv(in, out, 1));
}

torch::Tensor MovqResBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& zq) {
  auto h = conv1(movq_swish(norm1(x, zq)));
  h = conv2(movq_swish(norm2(h, zq)));
  return (nin_shortcut ? nin_shortcut(x) : x) + h;
}

MovqAttnImpl::MovqAttnImpl(int64_t channels, int64_t zq_channels, int64_t groups) {
  norm = register_module("norm", SpatialNorm(channels, zq_channels, groups));
  q = register_module("q", movq_conv(channels, channels, 1));
  k = register_module("k", movq_conv(channels, channels, 1));
  v = register_module("v", movq_conv(channels, channels, 1));
  proj_out = register_module("proj_out", movq_conv(channels, channels, 1));
}

torch::Tensor MovqAttnImpl::forward(const torch::Tensor& x, const torch::Tensor& zq) {
  const auto n = norm(x, zq);
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const auto query = q(n).reshape({B, C, H * W}).transpose(1, 2), key = k(n).reshape({B, C, H * W}).transpose(1, 2);
  const auto value = v(n).reshape({B, C, H * W}).transpose(1, 2);
  const auto out = at::scaled_dot_product_attention(query, key, value);  // scale C^-1/2, one head
  return x + proj_out(out.transpose(1, 2).reshape({B, C, H, W}));
}

MovqDecoderImpl::MovqDecoderImpl(const VqConfig& c) : config_(c) {
  VISPEC_ASSERT(c.z_channels == c.codebook_embed_dim, "MoVQ stacks z and zq: z_channels must equal codebook_embed_dim");
  const int64_t levels = int64_t(c.ch_mult.size()), E = c.codebook_embed_dim, G = c.norm_groups;
  time_res_stack = register_module("time_res_stack", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_res_blocks; ++i) time_res_stack->push_back(MovqTemporalBlock(c.z_channels));
  time_conv = register_module("time_conv", torch::nn::ModuleList());
  for (int64_t t = 1; t < c.temporal_downsample; t *= 2) time_conv->push_back(MovqTemporalUpsample(c.z_channels));
  int64_t block_in = c.ch * c.ch_mult.back();
  conv_in = register_module("conv_in", movq_conv(c.z_channels, block_in, 3));
  mid = register_module("mid", std::make_shared<torch::nn::Module>());
  mid_block_1 = mid->register_module("block_1", MovqResBlock(block_in, block_in, E, G));
  mid_attn = mid->register_module("attn_1", MovqAttn(block_in, E, G));
  mid_block_2 = mid->register_module("block_2", MovqResBlock(block_in, block_in, E, G));
  // up[i] is level i, 0 the highest resolution; built from the lowest, as the release builds it.
  std::vector<std::shared_ptr<torch::nn::Module>> built(static_cast<size_t>(levels));
  for (int64_t i = levels - 1; i >= 0; --i) {
    auto level = std::make_shared<torch::nn::Module>();
    auto block = level->register_module("block", torch::nn::ModuleList());
    auto attn = level->register_module("attn", torch::nn::ModuleList());
    const int64_t block_out = c.ch * c.ch_mult[size_t(i)];
    for (int64_t j = 0; j <= c.num_res_blocks; ++j) {
      block->push_back(MovqResBlock(block_in, block_out, E, G));
      block_in = block_out;
      if (c.level_attention && i == levels - 1) attn->push_back(MovqAttn(block_in, E, G));
    }
    if (i != 0) level->register_module("upsample", MovqUpsample(block_in));
    built[size_t(i)] = level;
  }
  up = register_module("up", torch::nn::ModuleList());
  for (auto& level : built) up->push_back(level);
  norm_out = register_module("norm_out", SpatialNorm(block_in, E, G));
  conv_out = register_module("conv_out", movq_conv(block_in, c.in_channels, 3));
}

torch::Tensor MovqDecoderImpl::forward(const torch::Tensor& z, const torch::Tensor& zq) {
  auto x = torch::cat({z, zq}, 0);  // [2B, C, 1, h, w]: the time axis's layers treat both alike
  for (const auto& block : *time_res_stack) x = block->as<MovqTemporalBlockImpl>()->forward(x);
  for (const auto& upsample : *time_conv) x = movq_swish(upsample->as<MovqTemporalUpsampleImpl>()->forward(x));
  // Frame 0 is the image, and the 2D layers work frame by frame.
  const auto frames = x.select(2, 0).chunk(2, 0);
  const auto q = frames[1];
  auto h = conv_in(frames[0]);
  h = mid_block_2(mid_attn(mid_block_1(h, q), q), q);
  for (int64_t i = int64_t(up->size()) - 1; i >= 0; --i) {
    const auto& level = up[size_t(i)];
    const auto block = level->named_children()["block"]->as<torch::nn::ModuleListImpl>();
    const auto attn = level->named_children()["attn"]->as<torch::nn::ModuleListImpl>();
    for (size_t j = 0; j < block->size(); ++j) {
      h = block->at<MovqResBlockImpl>(j).forward(h, q);
      if (!attn->is_empty()) h = attn->at<MovqAttnImpl>(j).forward(h, q);
    }
    if (i != 0) h = level->named_children()["upsample"]->as<MovqUpsampleImpl>()->forward(h);
  }
  return conv_out(movq_swish(norm_out(h, q)));
}

}  // namespace vispec
