// Trains MuLo-SD's resamplers (the MuLo-SD paper, supplementary "Implementation Details";
// models/drafters/mulo_resamplers.h) with the VQ frozen, on images at both resolutions (Fashion-MNIST, or an image
// folder with --images: the model's images, e.g. 32x32 -> a 16x16 grid, and their 2x2 average pooling, 16x16 -> an
// 8x8 grid, both tokenised by the same VQ):
//   U_2: low-res codes  -> high-res latent; loss MSE(VQ decoder(latent), the 32x32 image) + commitment
//   D_2: high-res codes -> low-res latent;  loss MSE(VQ decoder(latent), the 16x16 image) + commitment
// "commitment" is beta |z - sg(nearest code of z)|^2 on the (L2-normalised, as the VQ looks up) output z: it
// pulls outputs onto codes, since at decoding time each output vector is replaced by its nearest code. The
// paper adds LPIPS and a PatchGAN discriminator; neither has a pretrained network here.
// --token-weight w (our addition, 0 = the paper's losses) adds w * cross-entropy of the true tokens of the
// other resolution under softmax(-|z - e_j|^2 / 0.1) over the codes e_j: decoding keeps only each output's
// nearest code, and pixel MSE alone leaves outputs between codes (measured: 2.3% of U_2's nearest codes are
// the VQ's own tokens after 1500 steps, and the target rarely gives them 1% of its mass).
// Evaluation reports what decoding uses: the nearest-code tokens of each output, their agreement with the VQ's
// own tokens of the other resolution, and the pixel MSE of decoding them.
#include <spdlog/spdlog.h>

#include <filesystem>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/fashion_data.h"
#include "models/checkpoints/node_weights.h"
#include "models/checkpoints/safetensors.h"
#include "models/model_config.h"
#include "models/drafters/mulo_resamplers.h"
#include "models/vq/load_vq.h"
#include "train/fashion_only.h"
#include "train/image_folder.h"
#include "train/trainers.h"

namespace vispec {

namespace {
namespace F = torch::nn::functional;

struct Resolutions {
  torch::Tensor high, low;              // images [N, C, 32, 32] and [N, C, 16, 16]
  torch::Tensor high_codes, low_codes;  // VQ tokens [N, 256] and [N, 64] int32
};

// The images held in memory at once: a folder's are bounded by --max-images.
constexpr int64_t kMaxImageBytes = int64_t(16) << 30;

// A split's images at the model's size: Fashion-MNIST's, or an image folder's (its held-out images for "test";
// train/image_folder.h), at most `limit` (0: all).
torch::Tensor split_images(const TrainOptions& o, const ModelConfig& model, const std::string& split, int64_t limit) {
  if (o.images.empty()) {
    auto x = load_fashion_tensors(split, model.image_size()).images;
    return limit > 0 ? x.narrow(0, 0, std::min(limit, x.size(0))) : x;
  }
  const auto folder = scan_image_folder(o.images, std::max<int64_t>(model.gpt.num_classes, 1));
  auto picked = split_indices(folder.images.size(), split == "test");
  if (limit > 0 && int64_t(picked.size()) > limit) picked.resize(size_t(limit));
  const int64_t S = model.image_size(), bytes = int64_t(picked.size()) * model.vq.in_channels * S * S * 4;
  VISPEC_CHECK(bytes <= kMaxImageBytes, o.images, ": ", picked.size(), " ", split, " images of ", S, " px are ",
               bytes >> 20, " MiB in memory, more than ", kMaxImageBytes >> 20, " MiB: pass --max-images");
  return load_folder_images(folder, picked, S, model.vq.in_channels);
}

// Images of a split at both resolutions, with their tokens (cached in the run directory, with what they are of:
// a cache of other images is refused, never overwritten).
Resolutions load_split(const TrainOptions& o, const std::string& split, int64_t limit, VqModel& vq,
                       const ModelConfig& model) {
  Resolutions r;
  r.high = split_images(o, model, split, limit);
  r.low = half_resolution(r.high);
  const std::string cache = o.out_dir + "/" + split + "_tokens.safetensors";
  const std::string source = std::to_string(r.high.size(0)) + " images of " +
                             (o.images.empty() ? "Fashion-MNIST" : std::filesystem::absolute(o.images).string()) +
                             " at " + std::to_string(model.image_size()) + " px, VQ " + model.vq_weights;
  if (!file_exists(cache)) {
    spdlog::info("tokenising {} {} images at both resolutions", r.high.size(0), split);
    write_safetensors(cache,
                      {{"high", tokenize_images(vq, r.high, model.vq_weights)},
                       {"low", tokenize_images(vq, r.low, model.vq_weights)}},
                      {{"source", source}});
  }
  Metadata made;
  auto t = read_safetensors(cache, &made);
  r.high_codes = t.at("high");
  r.low_codes = t.at("low");
  // (A cache from before caches said what they were of: Fashion-MNIST's, when it has as many images.)
  const bool same =
      made.count("source") ? made["source"] == source : o.images.empty() && r.high_codes.size(0) == r.high.size(0);
  VISPEC_CHECK(same, cache, ": tokens of ", made.count("source") ? made["source"] : "other images", ", not of ", source,
               "; train into another --out");
  return r;
}

struct ResampledLatent {
  torch::Tensor z;       // [B, E, h, w] as the VQ would look it up (L2-normalised if configured)
  torch::Tensor commit;  // scalar
  torch::Tensor codes;   // [B, h*w]: the tokens decoding uses
  torch::Tensor flat;    // [B*h*w, E]: z, one row per cell
};

ResampledLatent quantize(VqModel& vq, const torch::Tensor& out) {
  auto [flat, codes] = vq->nearest(out);
  const int64_t B = out.size(0), h = out.size(2), w = out.size(3);
  auto zq = vq->codebook().index_select(0, codes.reshape(-1)).detach();
  auto z = flat.view({B, h, w, -1}).permute({0, 3, 1, 2});
  return {z, vq->config().commit_beta * F::mse_loss(flat, zq), codes, flat};
}

// Cross-entropy of the true tokens [B, h*w] under softmax(-|z - e_j|^2 / 0.1) over the codebook.
torch::Tensor token_loss(VqModel& vq, const ResampledLatent& r, const torch::Tensor& tokens) {
  auto e = vq->codebook().detach();
  auto d = torch::addmm(e.pow(2).sum(1).unsqueeze(0), r.flat, e.t(), 1, -2) + r.flat.pow(2).sum(1, true);
  return torch::cross_entropy_loss(-d / 0.1, tokens.reshape(-1));
}
}  // namespace

void train_mulo_resamplers(const TrainOptions& o, double token_weight) {
  const auto model = load_model_config(o.config);
  if (o.images.empty()) check_fashion_model(model, "train mulo-resamplers without --images");
  VISPEC_CHECK(model.has_mulo(), o.config, ": no drafters.mulo section (MuLo-SD's resamplers) to train");
  const auto device = prepare_training(o);
  auto vq = [&] {
    ShareWeightsOnNode scope(o.node_weights.get());
    return load_vq(model, device);
  }();
  for (auto& p : vq->parameters()) p.requires_grad_(false);
  // Rank 0 decodes the images and tokenises them into the run directory's caches; the other ranks decode the
  // images once the caches are there, and read their tokens.
  Resolutions train, test;
  const auto load_both = [&] {
    train = load_split(o, "train", o.max_images, vq, model);
    test = load_split(o, "test", 1000, vq, model);
  };
  if (o.writes()) load_both();
  o.ranks().barrier();
  if (!o.writes()) load_both();
  const int64_t g = model.gpt.grid_size, gl = model.mulo.gpt.grid_size;

  MuloResamplers net(model.mulo.resamplers);
  net->to(device);
  int64_t n_params = 0;
  for (const auto& p : net->parameters()) n_params += p.numel();
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
  spdlog::info("train mulo-resamplers: {:.2f}M parameters, {} images, {} steps of {}, device {}",
               double(n_params) / 1e6, train.high.size(0), o.steps, o.batch_size, device.str());

  auto codes_of = [&](const torch::Tensor& tokens, int64_t grid) {
    return vq->code_vectors(tokens.to(device, torch::kInt64), grid, grid);
  };
  const auto shard = o.shard();
  auto step_fn = [&](int64_t step) -> StepResult {
    auto idx = shard.rows(batch_indices(o.seed, step, train.high.size(0), o.batch_size));
    auto high_tokens = train.high_codes.index_select(0, idx).to(device, torch::kInt64);
    auto low_tokens = train.low_codes.index_select(0, idx).to(device, torch::kInt64);
    auto up = quantize(vq, net->up(codes_of(low_tokens, gl)));
    auto down = quantize(vq, net->down(codes_of(high_tokens, g)));
    auto up_mse = F::mse_loss(vq->decode_latent(up.z), train.high.index_select(0, idx).to(device));
    auto down_mse = F::mse_loss(vq->decode_latent(down.z), train.low.index_select(0, idx).to(device));
    StepResult r{up_mse + up.commit + down_mse + down.commit,
                 {{"up_mse", up_mse}, {"down_mse", down_mse}, {"up_commit", up.commit}, {"down_commit", down.commit}}};
    if (token_weight > 0) {
      auto up_ce = token_loss(vq, up, high_tokens), down_ce = token_loss(vq, down, low_tokens);
      r.loss = r.loss + token_weight * (up_ce + down_ce);
      r.extra["up_token_ce"] = up_ce;
      r.extra["down_token_ce"] = down_ce;
    }
    return r;
  };
  auto eval_fn = [&]() -> nlohmann::json {
    torch::NoGradGuard no_grad;
    net->eval();
    double up_match = 0, down_match = 0, up_mse = 0, down_mse = 0;
    const int64_t n = test.high.size(0);
    for (int64_t i = 0; i < n; i += 100) {
      const int64_t b = std::min<int64_t>(100, n - i);
      auto up = quantize(vq, net->up(codes_of(test.low_codes.narrow(0, i, b), gl))).codes;
      auto down = quantize(vq, net->down(codes_of(test.high_codes.narrow(0, i, b), g))).codes;
      up_match += up.cpu().eq(test.high_codes.narrow(0, i, b)).to(torch::kFloat64).sum().item<double>();
      down_match += down.cpu().eq(test.low_codes.narrow(0, i, b)).to(torch::kFloat64).sum().item<double>();
      up_mse += (vq->decode_codes(up, g, g).cpu() - test.high.narrow(0, i, b)).pow(2).mean().item<double>() * double(b);
      down_mse +=
          (vq->decode_codes(down, gl, gl).cpu() - test.low.narrow(0, i, b)).pow(2).mean().item<double>() * double(b);
    }
    net->train();
    return {{"test_up_token_match", up_match / double(n * g * g)},
            {"test_down_token_match", down_match / double(n * gl * gl)},
            {"test_up_mse", up_mse / double(n)},
            {"test_down_mse", down_mse / double(n)}};
  };
  run_training(o, *net, opt, step_fn, eval_fn,
               {{"kind", "mulo_resamplers"}, {"token_weight", std::to_string(token_weight)}});
}

}  // namespace vispec
