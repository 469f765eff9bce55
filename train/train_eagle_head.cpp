// Trains EAGLE-2's drafter (models/drafters/eagle_drafter.h) on self-distillation data, as EAGLE's train/main.py does:
// pairs (feature_t, token_t) -> feature_{t+1}, with features the target's post-norm hidden states (the
// stored pre-norm states through the frozen target norm), uniform noise on the input features,
// loss = SmoothL1(prediction, feature_{t+1}) + ploss_weight * CE(softmax(head(feature_{t+1})), head(prediction)).
// Rows from the uncond stream (null_fraction of them) teach the drafter the CFG branch.
// Differences from EAGLE, kept on purpose: gradients are clipped by norm (EAGLE clips by value at 0.5) and
// the schedule is warm-up + cosine (EAGLE: warm-up then constant).
#include <spdlog/spdlog.h>

#include "models/drafters/eagle_drafter.h"
#include "models/checkpoints/head_file.h"
#include "models/checkpoints/load.h"
#include "train/head_training.h"
#include "train/trainers.h"

namespace vispec {

namespace {
struct EagleForward {
  torch::Tensor vloss, ploss;                 // scalars
  torch::Tensor draft_logits, target_logits;  // [B * (T - 1), V]
};

// hidden [B, T, D] pre-norm, tokens [B, T]: the rows `shard` of a batch. noise: the uniform noise's full width
// (0 = none), drawn for the whole batch and cut like it, so a row's noise does not depend on the rank count.
EagleForward eagle_forward(EagleDrafter& drafter, Gpt& target, const torch::Tensor& hidden, const torch::Tensor& tokens,
                           double noise, uint64_t noise_key, const BatchShard& shard) {
  const int64_t B = hidden.size(0), T = hidden.size(1) - 1;  // T pairs have a next feature
  torch::Tensor features, embeddings, next, target_logits;
  {
    torch::NoGradGuard no_grad;
    features = target->norm(hidden);
    embeddings = target->embed_image(tokens.narrow(1, 0, T));
    next = features.narrow(1, 1, T);
    target_logits = target->image_logits(next).reshape({B * T, -1});
  }
  auto input = features.narrow(1, 0, T);
  if (noise > 0) {
    auto gen = at::detail::createCPUGenerator(noise_key);
    auto sizes = input.sizes().vec();
    sizes[0] = shard.global;
    input = input + shard.rows((torch::rand(sizes, gen) - 0.5) * noise).to(input.device());
  }
  const auto opts = torch::TensorOptions().dtype(torch::kInt64).device(hidden.device());
  const auto cells = torch::arange(T, opts).unsqueeze(0).expand({B, T});
  auto prediction = drafter(input, embeddings, cells, causal_mask(T, hidden.device()));
  auto draft_logits = target->image_logits(prediction).reshape({B * T, -1});
  auto vloss = torch::smooth_l1_loss(prediction, next);
  auto ploss = -(torch::softmax(target_logits, -1) * torch::log_softmax(draft_logits, -1)).sum(-1).mean();
  return {vloss, ploss, draft_logits, target_logits};
}
}  // namespace

void train_eagle_head(const HeadTrainOptions& o) {
  auto t = prepare_head_training(o);
  EagleDrafter drafter(t.target_config.gpt);
  if (!o.init.empty()) load_state_dict(*drafter, state_dict(*load_eagle_drafter(o.init, t.target_config)), o.init);
  drafter->to(t.device);
  t.log_data();
  int64_t n_params = 0;
  for (const auto& p : drafter->parameters()) n_params += p.numel();
  spdlog::info("train eagle-head: {:.3f}M parameters, {} steps of {} sequences, device {}", double(n_params) / 1e6,
               o.steps, o.batch_size, t.device.str());
  torch::optim::AdamW opt(drafter->parameters(),
                          torch::optim::AdamWOptions(o.lr).betas({0.9, 0.95}).weight_decay(o.weight_decay));
  const double noise = o.noise_std * 512.0 / double(t.reader->positions());
  const auto shard = o.shard();
  auto step_fn = [&](int64_t step) -> StepResult {
    const auto batch = t.batches->batch(step);  // this rank's rows
    auto f = eagle_forward(drafter, t.target, batch.hidden.to(t.device), batch.tokens.to(t.device), noise,
                           o.seed * 0x9E3779B1ull + uint64_t(step), shard);
    return {f.vloss + o.ploss_weight * f.ploss, {{"vloss", f.vloss.detach()}, {"ploss", f.ploss.detach()}}};
  };
  auto eval_fn = [&]() -> nlohmann::json {
    torch::NoGradGuard no_grad;
    drafter->eval();
    double vloss = 0, ploss = 0, accept = 0;
    TokenAgreement agree;
    for (const auto& b : t.heldout) {
      auto f = eagle_forward(drafter, t.target, b.hidden, b.tokens, 0, 0, {0, b.hidden.size(0), b.hidden.size(0)});
      const double n = double(f.draft_logits.size(0));
      vloss += f.vloss.item<double>() * n;
      ploss += f.ploss.item<double>() * n;
      // Acceptance of one drafted token by speculative sampling at T = 1 (no CFG): sum_v min(p, q).
      accept +=
          torch::minimum(torch::softmax(f.draft_logits, -1), torch::softmax(f.target_logits, -1)).sum().item<double>();
      agree.add(f.draft_logits, f.target_logits);
    }
    drafter->train();
    const double n = double(agree.count);
    return {{"heldout_vloss", vloss / n},
            {"heldout_ploss", ploss / n},
            {"heldout_top1", double(agree.top1) / n},
            {"heldout_top3", double(agree.top3) / n},
            {"heldout_accept", accept / n}};
  };
  auto metadata = head_metadata("eagle_head", t.target_config);
  metadata["dataset"] = t.reader->path();
  run_training(o, *drafter, opt, step_fn, eval_fn, metadata);
}

}  // namespace vispec
