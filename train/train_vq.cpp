// Trains the VQ tokenizer (LlamaGen's VQ losses without the perceptual and GAN terms, which need pretrained
// networks we do not have: reconstruction MSE + codebook loss + beta * commitment).
#include <spdlog/spdlog.h>

#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "models/vq/vq.h"
#include "io/fashion_data.h"
#include "train/fashion_only.h"
#include "train/trainers.h"

namespace vispec {

namespace {
struct VqEval {
  double mse;
  int64_t codes_used;
};

VqEval evaluate_vq(VqModel& vq, const torch::Tensor& images, torch::Device device) {
  torch::NoGradGuard no_grad;
  vq->eval();
  double se = 0;
  auto used = torch::zeros({vq->config().codebook_size}, torch::kBool);
  // Small batches: on CPU, im2col buffers of large ones cost more than the convolutions (measured 10x slower at 500).
  for (int64_t i = 0; i < images.size(0); i += 64) {
    auto x = images.narrow(0, i, std::min<int64_t>(64, images.size(0) - i)).to(device);
    auto out = vq->forward_train(x);
    se += (out.recon - x).pow(2).sum().item<double>();
    used.index_fill_(0, out.codes.reshape(-1).to(torch::kCPU), true);
  }
  vq->train();
  return {se / double(images.numel()), used.sum().item<int64_t>()};
}
}  // namespace

void train_vq(const TrainOptions& o) {
  const auto model = load_model_config(o.config);
  check_fashion_model(model, "train vq");
  const auto device = prepare_training(o);
  auto train = load_fashion_tensors("train", model.image_size());
  auto eval_images = load_fashion_tensors("test", model.image_size()).images;
  eval_images = eval_images.narrow(0, 0, std::min(o.eval_images, eval_images.size(0)));
  VqModel vq(model.vq);
  vq->to(device);
  torch::optim::AdamW opt(vq->parameters(),
                          torch::optim::AdamWOptions(o.lr).betas({0.9, 0.95}).weight_decay(o.weight_decay));
  spdlog::info("train vq: {} images, {} steps of {}, device {}", train.images.size(0), o.steps, o.batch_size,
               device.str());
  const auto shard = o.shard();
  auto step_fn = [&](int64_t step) -> StepResult {
    auto idx = shard.rows(batch_indices(o.seed, step, train.images.size(0), o.batch_size));
    auto x = train.images.index_select(0, idx).to(device);
    auto out = vq->forward_train(x);
    auto mse = torch::mse_loss(out.recon, x);
    return {mse + out.codebook_loss + out.commit_loss, {{"mse", mse}, {"commit", out.commit_loss}}};
  };
  auto eval_fn = [&]() -> nlohmann::json {
    const auto ev = evaluate_vq(vq, eval_images, device);
    return {{"test_mse", ev.mse}, {"codes_used", ev.codes_used}};
  };
  run_training(o, *vq, opt, step_fn, eval_fn, {{"kind", "vq"}});
}

}  // namespace vispec
