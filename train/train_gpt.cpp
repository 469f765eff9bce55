// Trains a class-conditional GPT on VQ tokens (LlamaGen's c2i recipe: next-token cross-entropy over the image
// tokens, 10% of conditions dropped to the null class for CFG): the model config's target, with --drafter SD's
// small drafter, with --mulo MuLo-SD's drafter on the same images at half resolution through the same VQ. The
// tokens come from Fashion-MNIST (the embedded model), an image folder or LlamaGen's code files
// (train/token_data.h).
#include <spdlog/spdlog.h>

#include "core/check.h"
#include "models/gpt/gpt.h"
#include "models/model_config.h"
#include "train/token_data.h"
#include "train/trainers.h"

namespace vispec {

namespace {
constexpr double kClassDropout = 0.1;

// Mean next-token cross-entropy over the first n test images, all conditions real.
double test_loss(Gpt& gpt, const TokenData& data, int64_t n, torch::Device device) {
  torch::NoGradGuard no_grad;
  gpt->eval();
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += 32) {  // small batches: large ones are far slower on CPU
    const int64_t b = std::min<int64_t>(32, n - i);
    auto tokens = data.test_tokens.narrow(0, i, b).to(device, torch::kInt64);
    auto labels = data.test_labels.narrow(0, i, b).to(device);
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
  VISPEC_CHECK(!(o.drafter && o.mulo), "train gpt: --drafter or --mulo, not both");
  VISPEC_CHECK(!o.drafter || model.has_draft_gpt(), o.config, ": no drafters.gpt section to train (--drafter)");
  VISPEC_CHECK(!o.mulo || model.has_mulo(), o.config, ": no drafters.mulo section to train (--mulo)");
  const GptConfig& arch = o.drafter ? model.draft_gpt : o.mulo ? model.mulo.gpt : model.gpt;
  VISPEC_CHECK(arch.num_classes > 0, o.config, ": train gpt trains class-conditional GPTs, and this one is not");
  const auto device = prepare_training(o);
  // Rank 0 tokenises the images into the run directory's cache; the other ranks read that.
  const auto data = load_token_data(o, model, o.mulo, arch.grid_size * arch.grid_size, arch.num_classes, device);
  const auto& tokens = data.train_tokens;
  const auto& labels = data.train_labels;
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
    y = torch::where(drop, torch::full_like(y, arch.num_classes), y);
    auto out = gpt->forward_sequence(gpt->embed_classes(y), x.narrow(1, 0, x.size(1) - 1));
    return {torch::cross_entropy_loss(out.logits.reshape({-1, out.logits.size(-1)}), x.reshape(-1)), {}};
  };
  const int64_t test_images = std::min<int64_t>(500, data.test_tokens.size(0));
  auto eval_fn = [&]() -> nlohmann::json { return {{"test_loss", test_loss(gpt, data, test_images, device)}}; };
  run_training(o, *gpt, opt, step_fn, eval_fn, {{"kind", o.drafter ? "draft_gpt" : o.mulo ? "mulo_gpt" : "gpt"}});
}

}  // namespace vispec
