// Trains the class-conditional GPT on VQ tokens of Fashion-MNIST (LlamaGen's c2i recipe: next-token
// cross-entropy over the 256 image tokens, 10% of conditions dropped to the null class for CFG); with --drafter
// SD's small drafter, with --mulo MuLo-SD's drafter on the same images at half resolution (16x16 pixels, an
// 8x8 grid through the same VQ).
#include <spdlog/spdlog.h>

#include "core/check.h"
#include "io/atomic_file.h"
#include "models/gpt/gpt.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "models/drafters/mulo_resamplers.h"
#include "models/vq/vq.h"
#include "io/fashion_data.h"
#include "train/fashion_only.h"
#include "train/trainers.h"

namespace vispec {

namespace {
constexpr double kClassDropout = 0.1;

// Tokens of the train and test sets, cached in the run directory. (No flip augmentation: a CPU run sees
// less than two epochs, so more distinct images would not be seen anyway.) half: at half resolution.
TensorMap token_dataset(const ModelConfig& model, const std::string& out_dir, bool half, torch::Device device) {
  const std::string cache = out_dir + "/tokens.safetensors";
  if (file_exists(cache)) return read_safetensors(cache);
  VqModel vq(model.vq);
  load_weights(*vq, model.vq_weights, {}, model.vq_keys);
  vq->to(device);
  vq->eval();
  auto train = load_fashion_tensors("train", model.image_size());
  auto test = load_fashion_tensors("test", model.image_size());
  if (half) {
    train.images = half_resolution(train.images);
    test.images = half_resolution(test.images);
  }
  spdlog::info("tokenising {} + {} images with {}", train.images.size(0), test.images.size(0), model.vq_weights);
  TensorMap data;
  data["train_tokens"] = tokenize_images(vq, train.images);
  data["train_labels"] = train.labels;
  data["test_tokens"] = tokenize_images(vq, test.images);
  data["test_labels"] = test.labels;
  write_safetensors(cache, data);
  return data;
}

// Mean next-token cross-entropy over the first n test images, all conditions real.
double test_loss(Gpt& gpt, const TensorMap& data, int64_t n, torch::Device device) {
  torch::NoGradGuard no_grad;
  gpt->eval();
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += 32) {  // small batches: large ones are far slower on CPU
    const int64_t b = std::min<int64_t>(32, n - i);
    auto tokens = data.at("test_tokens").narrow(0, i, b).to(device, torch::kInt64);
    auto labels = data.at("test_labels").narrow(0, i, b).to(device);
    auto out = gpt->forward_sequence(gpt->embed_classes(labels), tokens.narrow(1, 0, tokens.size(1) - 1));
    total +=
        torch::cross_entropy_loss(out.logits.reshape({-1, out.logits.size(-1)}), tokens.reshape(-1)).item<double>() *
        double(b);
    count += b;
  }
  gpt->train();
  return total / double(count);
}
}  // namespace

void train_gpt(const TrainOptions& o) {
  const auto model = load_model_config(o.config);
  check_fashion_model(model, "train gpt");
  const auto device = prepare_training(o);
  VISPEC_CHECK(!(o.drafter && o.mulo), "train gpt: --drafter or --mulo, not both");
  VISPEC_CHECK(!o.drafter || model.has_draft_gpt(), o.config, ": no drafters.gpt section to train (--drafter)");
  VISPEC_CHECK(!o.mulo || model.has_mulo(), o.config, ": no drafters.mulo section to train (--mulo)");
  // Rank 0 tokenises the images into the run directory's cache; the other ranks read that.
  if (o.writes()) token_dataset(model, o.out_dir, o.mulo, device);
  o.ranks().barrier();
  const auto data = token_dataset(model, o.out_dir, o.mulo, device);
  const auto& tokens = data.at("train_tokens");
  const auto& labels = data.at("train_labels");
  const GptConfig& arch = o.drafter ? model.draft_gpt : o.mulo ? model.mulo.gpt : model.gpt;
  // Seeded here, so the initialisation does not depend on whether tokenising (which builds a VQ) ran before.
  torch::manual_seed(o.seed);
  Gpt gpt(arch);
  gpt->to(device);
  int64_t n_params = 0;
  for (const auto& p : gpt->parameters()) n_params += p.numel();
  torch::optim::AdamW opt(gpt->parameters(),
                          torch::optim::AdamWOptions(o.lr).betas({0.9, 0.95}).weight_decay(o.weight_decay));
  spdlog::info("train gpt: {:.2f}M parameters, {} sequences, {} steps of {}, device {}", double(n_params) / 1e6,
               tokens.size(0), o.steps, o.batch_size, device.str());
  const auto shard = o.shard();
  auto step_fn = [&](int64_t step) -> StepResult {
    // This rank's rows of the batch, and of its condition dropout, keyed by (seed, step) like the batch itself.
    auto idx = shard.rows(batch_indices(o.seed, step, tokens.size(0), o.batch_size));
    auto x = tokens.index_select(0, idx).to(device, torch::kInt64);  // [B, 256]
    auto y = labels.index_select(0, idx).to(device);
    auto gen = at::detail::createCPUGenerator(o.seed * 7919ull + uint64_t(step));
    auto drop = shard.rows(torch::rand({o.batch_size}, gen).lt(kClassDropout)).to(device);
    y = torch::where(drop, torch::full_like(y, model.gpt.num_classes), y);
    auto out = gpt->forward_sequence(gpt->embed_classes(y), x.narrow(1, 0, x.size(1) - 1));
    return {torch::cross_entropy_loss(out.logits.reshape({-1, out.logits.size(-1)}), x.reshape(-1)), {}};
  };
  const int64_t test_images = std::min<int64_t>(500, data.at("test_tokens").size(0));
  auto eval_fn = [&]() -> nlohmann::json { return {{"test_loss", test_loss(gpt, data, test_images, device)}}; };
  run_training(o, *gpt, opt, step_fn, eval_fn, {{"kind", o.drafter ? "draft_gpt" : o.mulo ? "mulo_gpt" : "gpt"}});
}

}  // namespace vispec
