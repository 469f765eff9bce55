// Trains the VQ tokenizer (LlamaGen's VQ losses without the perceptual and GAN terms, which need pretrained
// networks we do not have: reconstruction MSE + codebook loss + beta * commitment).
#include <spdlog/spdlog.h>

#include <chrono>

#include "core/device.h"
#include "io/atomic_file.h"
#include "models/load.h"
#include "models/model_config.h"
#include "models/vq.h"
#include "train/fashion_data.h"
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
  for (int64_t i = 0; i < images.size(0); i += 500) {
    auto x = images.narrow(0, i, std::min<int64_t>(500, images.size(0) - i)).to(device);
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
  set_threads(o.threads);
  const auto device = pick_device(o.device);
  make_directories(o.out_dir);
  torch::manual_seed(o.seed);

  auto train = load_fashion_tensors("train", model.image_size());
  auto test = load_fashion_tensors("test", model.image_size());
  auto eval_images = test.images.narrow(0, 0, 2000);
  VqModel vq(model.vq);
  vq->to(device);
  torch::optim::AdamW opt(vq->parameters(), torch::optim::AdamWOptions(o.lr).betas({0.9, 0.95}).weight_decay(o.weight_decay));
  int64_t step = resume_checkpoint(o.out_dir, *vq, opt);
  spdlog::info("train vq: {} images, {} steps of {}, device {}", train.images.size(0), o.steps, o.batch_size,
               device.str());

  auto t0 = std::chrono::steady_clock::now();
  for (; step < o.steps; ++step) {
    set_learning_rate(opt, learning_rate(o, step));
    auto idx = batch_indices(o.seed, step, train.images.size(0), o.batch_size);
    auto x = train.images.index_select(0, idx).to(device);
    auto out = vq->forward_train(x);
    auto mse = torch::mse_loss(out.recon, x);
    auto loss = mse + out.codebook_loss + out.commit_loss;
    opt.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(vq->parameters(), o.grad_clip);
    opt.step();
    const bool last = step + 1 == o.steps;
    if ((step + 1) % o.log_every == 0 || last) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      log_train_step(o.out_dir, {{"step", step + 1}, {"loss", loss.item<double>()}, {"mse", mse.item<double>()},
                                 {"commit", out.commit_loss.item<double>()}, {"lr", learning_rate(o, step)},
                                 {"elapsed_s", secs}});
    }
    if ((step + 1) % o.checkpoint_every == 0 || last) {
      auto ev = evaluate_vq(vq, eval_images, device);
      log_train_step(o.out_dir, {{"step", step + 1}, {"test_mse", ev.mse}, {"codes_used", ev.codes_used}});
      save_checkpoint(o.out_dir, *vq, opt, step + 1, {{"test_mse", ev.mse}, {"codes_used", ev.codes_used}});
    }
  }
  const std::string dst = o.export_path.empty() ? o.out_dir + "/model.safetensors" : o.export_path;
  save_weights(*vq, dst, {{"format_version", "1"}, {"kind", "vq"}, {"steps", std::to_string(o.steps)}});
  spdlog::info("wrote {}", dst);
}

}  // namespace vispec
