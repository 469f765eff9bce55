#include "models/vq/vq.h"

#include <spdlog/spdlog.h>

#include "core/check.h"

namespace vispec {

namespace F = torch::nn::functional;

namespace {
torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t pad = -1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k).stride(stride).padding(pad < 0 ? k / 2 : pad));
}
torch::nn::GroupNorm group_norm(int64_t groups, int64_t ch) {
  return torch::nn::GroupNorm(torch::nn::GroupNormOptions(std::min(groups, ch), ch).eps(1e-6));
}
torch::Tensor swish(const torch::Tensor& x) { return x * torch::sigmoid(x); }

// LlamaGen's Downsample pads (0,1,0,1) and applies a stride-2 3x3 conv without padding.
struct PadRightBottomImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor& x) { return F::pad(x, F::PadFuncOptions({0, 1, 0, 1})); }
};
TORCH_MODULE(PadRightBottom);
struct UpsampleNearestImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor& x) {
    return F::interpolate(
        x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(torch::kNearest));
  }
};
TORCH_MODULE(UpsampleNearest);
}  // namespace

ResnetBlockImpl::ResnetBlockImpl(int64_t in, int64_t out, int64_t groups) {
  norm1 = register_module("norm1", group_norm(groups, in));
  conv1 = register_module("conv1", conv(in, out, 3));
  norm2 = register_module("norm2", group_norm(groups, out));
  conv2 = register_module("conv2", conv(out, out, 3));
  if (in != out) nin_shortcut = register_module("nin_shortcut", conv(in, out, 1));
}

torch::Tensor ResnetBlockImpl::forward(const torch::Tensor& x) {
  auto h = conv1(swish(norm1(x)));
  h = conv2(swish(norm2(h)));
  return (nin_shortcut ? nin_shortcut(x) : x) + h;
}

AttnBlockImpl::AttnBlockImpl(int64_t ch, int64_t groups) {
  norm = register_module("norm", group_norm(groups, ch));
  q = register_module("q", conv(ch, ch, 1));
  k = register_module("k", conv(ch, ch, 1));
  v = register_module("v", conv(ch, ch, 1));
  proj_out = register_module("proj_out", conv(ch, ch, 1));
}

torch::Tensor AttnBlockImpl::forward(const torch::Tensor& x) {
  auto h = norm(x);
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  auto qq = q(h).reshape({B, C, H * W}).permute({0, 2, 1});  // [B, HW, C]
  auto kk = k(h).reshape({B, C, H * W});                     // [B, C, HW]
  auto w = torch::softmax(torch::bmm(qq, kk) / std::sqrt(double(C)), -1);
  auto vv = v(h).reshape({B, C, H * W});
  auto out = torch::bmm(vv, w.permute({0, 2, 1})).reshape({B, C, H, W});
  return x + proj_out(out);
}

VqLevelImpl::VqLevelImpl(int64_t in, int64_t out, int64_t n_res, bool with_attn, int resample, int64_t groups) {
  res = register_module("res", torch::nn::ModuleList());
  attn = register_module("attn", torch::nn::ModuleList());
  for (int64_t i = 0; i < n_res; ++i) {
    res->push_back(ResnetBlock(i == 0 ? in : out, out, groups));
    if (with_attn) attn->push_back(AttnBlock(out, groups));
  }
  if (resample < 0) {
    downsample = register_module("downsample", torch::nn::Sequential());
    downsample->push_back("pad", PadRightBottom());
    downsample->push_back("conv", conv(out, out, 3, 2, 0));
  } else if (resample > 0) {
    upsample = register_module("upsample", torch::nn::Sequential());
    upsample->push_back("nearest", UpsampleNearest());
    upsample->push_back("conv", conv(out, out, 3));
  }
}

torch::Tensor VqLevelImpl::forward(torch::Tensor x) {
  for (size_t i = 0; i < res->size(); ++i) {
    x = res[i]->as<ResnetBlock>()->forward(x);
    if (attn->size() > 0) x = attn[i]->as<AttnBlock>()->forward(x);
  }
  if (downsample) x = downsample->forward(x);
  if (upsample) x = upsample->forward(x);
  return x;
}

VqCoderImpl::VqCoderImpl(const VqConfig& c, bool encoder) {
  const int64_t levels = int64_t(c.ch_mult.size()), g = c.norm_groups;
  conv_blocks = register_module("conv_blocks", torch::nn::ModuleList());
  mid = register_module("mid", torch::nn::ModuleList());
  int64_t block_in;
  if (encoder) {
    conv_in = register_module("conv_in", conv(c.in_channels, c.ch, 3));
    block_in = c.ch;
    for (int64_t i = 0; i < levels; ++i) {
      const int64_t out = c.ch * c.ch_mult[i];
      const bool last = i == levels - 1;
      conv_blocks->push_back(VqLevel(block_in, out, c.num_res_blocks, last && c.level_attention, last ? 0 : -1, g));
      block_in = out;
    }
  } else {
    block_in = c.ch * c.ch_mult.back();
    conv_in = register_module("conv_in", conv(c.z_channels, block_in, 3));
  }
  mid->push_back(ResnetBlock(block_in, block_in, g));
  mid->push_back(AttnBlock(block_in, g));
  mid->push_back(ResnetBlock(block_in, block_in, g));
  if (!encoder) {
    for (int64_t i = 0; i < levels; ++i) {
      const int64_t out = c.ch * c.ch_mult[levels - 1 - i];
      const bool last = i == levels - 1;
      conv_blocks->push_back(
          VqLevel(block_in, out, c.num_res_blocks + 1, i == 0 && c.level_attention, last ? 0 : 1, g));
      block_in = out;
    }
  }
  norm_out = register_module("norm_out", group_norm(g, block_in));
  conv_out = register_module("conv_out", conv(block_in, encoder ? c.z_channels : c.in_channels, 3));
  // Encoder applies levels then mid; decoder mid then levels. Which one we are is known from conv_in.
  is_encoder_ = encoder;
}

torch::Tensor VqCoderImpl::forward(torch::Tensor x) {
  x = conv_in(x);
  auto run_mid = [&] {
    x = mid[0]->as<ResnetBlock>()->forward(x);
    x = mid[1]->as<AttnBlock>()->forward(x);
    x = mid[2]->as<ResnetBlock>()->forward(x);
  };
  if (!is_encoder_) run_mid();
  for (auto& level : *conv_blocks) x = level->as<VqLevel>()->forward(x);
  if (is_encoder_) run_mid();
  return conv_out(swish(norm_out(x)));
}

VqCodebookImpl::VqCodebookImpl(int64_t size, int64_t dim) {
  embedding = register_module("embedding", torch::nn::Embedding(size, dim));
  torch::nn::init::uniform_(embedding->weight, -1.0 / double(size), 1.0 / double(size));
}

VqModelImpl::VqModelImpl(const VqConfig& c) : config_(c) {
  if (c.kind == VqKind::movq) {  // Emu3's: a decoder of its own, the release's names, no encoder
    movq_decoder = register_module("decoder", MovqDecoder(c));
    movq_post_quant_conv = register_module("post_quant_conv", CausalConv3d(c.codebook_embed_dim, c.z_channels, 3, 1));
    quantize = register_module("quantize", VqCodebook(c.codebook_size, c.codebook_embed_dim));
    return;
  }
  encoder = register_module("encoder", VqCoder(c, true));
  decoder = register_module("decoder", VqCoder(c, false));
  quant_conv = register_module("quant_conv", conv(c.z_channels, c.codebook_embed_dim, 1));
  post_quant_conv = register_module("post_quant_conv", conv(c.codebook_embed_dim, c.z_channels, 1));
  quantize = register_module("quantize", VqCodebook(c.codebook_size, c.codebook_embed_dim));
}

torch::Tensor VqModelImpl::codebook() {
  auto e = quantize->embedding->weight;
  return config_.codebook_l2_norm ? F::normalize(e, F::NormalizeFuncOptions().dim(-1)) : e;
}

std::pair<torch::Tensor, torch::Tensor> VqModelImpl::nearest(const torch::Tensor& latent) {
  const int64_t B = latent.size(0), E = latent.size(1);
  auto z = latent.permute({0, 2, 3, 1}).reshape({-1, E});  // [B*h*w, E]
  if (config_.codebook_l2_norm) z = F::normalize(z, F::NormalizeFuncOptions().dim(-1));
  auto e = codebook();
  // argmin_k |z - e_k|^2 = argmin_k (|e_k|^2 - 2 z.e_k): |z|^2 is the same for every k. One addmm.
  auto d = torch::addmm(e.pow(2).sum(1).unsqueeze(0), z, e.t(), /*beta=*/1, /*alpha=*/-2);
  return {z, d.argmin(1).view({B, -1})};
}

torch::Tensor VqModelImpl::encode(const torch::Tensor& images) {
  check_has_encoder();
  const auto latent = quant_conv(encoder(images));
  // The nearest-code search would make a NaN code 0 without a word, and a trainer train on it (one read: encode
  // tokenises whole images, never inside a decode step).
  VISPEC_CHECK(torch::isfinite(latent).all().item<bool>(),
               "the VQ encoder's latents are not finite (NaN or infinity): a NaN in its weights?");
  return nearest(latent).second;
}

torch::Tensor VqModelImpl::code_vectors(const torch::Tensor& codes, int64_t h, int64_t w) {
  const int64_t B = codes.size(0);
  return codebook().index_select(0, codes.reshape(-1)).view({B, h, w, -1}).permute({0, 3, 1, 2}).contiguous();
}

torch::Tensor VqModelImpl::decode_latent(const torch::Tensor& latent) {
  if (movq_decoder) {  // the latent as one frame of a video
    const auto zq = latent.unsqueeze(2);
    return movq_decoder(movq_post_quant_conv(zq), zq);
  }
  return decoder(post_quant_conv(latent));
}

void VqModelImpl::check_has_encoder() const {
  VISPEC_CHECK(config_.kind != VqKind::movq,
               "Emu3's MoVQ (vq.kind movq) decodes codes only: vispec has no encoder "
               "for it (image tokenising, VQ training)");
}

torch::Tensor VqModelImpl::decode_codes(const torch::Tensor& codes, int64_t h, int64_t w) {
  return decode_latent(code_vectors(codes, h, w));
}

VqTrainOutput VqModelImpl::forward_train(const torch::Tensor& images) {
  check_has_encoder();
  auto latent = quant_conv(encoder(images));  // [B, E, h, w]
  const int64_t B = latent.size(0), h = latent.size(2), w = latent.size(3);
  auto [z, codes] = nearest(latent);  // z [N, E]
  auto zq = codebook().index_select(0, codes.reshape(-1));
  VqTrainOutput out;
  out.codebook_loss = F::mse_loss(zq, z.detach());
  out.commit_loss = config_.commit_beta * F::mse_loss(z, zq.detach());
  auto zst = z + (zq - z).detach();  // straight-through estimator
  zst = zst.view({B, h, w, -1}).permute({0, 3, 1, 2}).contiguous();
  out.recon = decoder(post_quant_conv(zst));
  out.codes = codes;
  return out;
}

torch::Tensor tokenize_images(VqModel& vq, const torch::Tensor& images, const std::string& weights) {
  torch::NoGradGuard no_grad;
  const auto device = vq->quantize->embedding->weight.device();
  std::vector<torch::Tensor> out;
  for (int64_t i = 0; i < images.size(0); i += 64) {
    const auto chunk = images.narrow(0, i, std::min<int64_t>(64, images.size(0) - i)).to(device);
    try {
      out.push_back(vq->encode(chunk).cpu());
    } catch (const Error& e) {
      VISPEC_FAIL(weights, ": ", e.what());  // the weight file the line is about
    }
    if ((i / 64) % 100 == 99) spdlog::info("tokenised {}/{}", i + 64, images.size(0));
  }
  return torch::cat(out).to(torch::kInt32);
}

}  // namespace vispec
