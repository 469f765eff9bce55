// Trains SSD's spatial heads (models/drafters/ssd_heads.h; the SSD paper Eq. 3) on self-distillation data: for every
// head (direction, offset k) and every valid source cell (y, x) (horizontal: x + k < W; vertical: y + k < H),
// SmoothL1(f([h_pre(y, x); e(token(y, x))]), h_pre(target cell)). The heads are independent predictors with
// identical hyperparameters (the paper trains them separately): one optimizer over disjoint parameters with
// gradient norms clipped per head is the same thing in one pass over the data.
#include <spdlog/spdlog.h>

#include "models/checkpoints/head_file.h"
#include "models/checkpoints/load.h"
#include "models/drafters/ssd_heads.h"
#include "train/head_training.h"
#include "train/trainers.h"

namespace vispec {

namespace {
// Raster indices of the source cells head i can be trained on.
torch::Tensor source_cells(const SsdHeads& heads, int64_t i, int64_t grid) {
  std::vector<int64_t> cells;
  const int64_t k = heads->is_vertical(i) ? heads->raster_offset(i) / grid : heads->raster_offset(i);
  for (int64_t y = 0; y < grid; ++y)
    for (int64_t x = 0; x < grid; ++x)
      if (heads->is_vertical(i) ? y + k < grid : x + k < grid) cells.push_back(y * grid + x);
  return torch::tensor(cells, torch::kInt64);
}

struct HeadForward {
  torch::Tensor prediction, target;  // [B, cells, D] pre-norm
};
}  // namespace

void train_ssd_heads(const HeadTrainOptions& o) {
  auto t = prepare_head_training(o);
  const int64_t grid = t.target_config.gpt.grid_size;
  SsdHeads heads(t.target_config.gpt, o.horizontal, o.vertical);
  if (!o.init.empty()) load_state_dict(*heads, state_dict(*load_ssd_heads(o.init, t.target_config)), o.init);
  heads->to(t.device);
  t.log_data();
  std::vector<torch::Tensor> sources;
  std::vector<std::vector<torch::Tensor>> clip_groups;
  for (int64_t i = 0; i < heads->count(); ++i) {
    sources.push_back(source_cells(heads, i, grid).to(t.device));
    clip_groups.push_back(heads->head(i)->parameters());
  }
  int64_t n_params = 0;
  for (const auto& p : heads->parameters()) n_params += p.numel();
  spdlog::info("train ssd-heads: {} horizontal + {} vertical heads, {:.3f}M parameters, {} steps of {} samples",
               o.horizontal, o.vertical, double(n_params) / 1e6, o.steps, o.batch_size);
  torch::optim::AdamW opt(heads->parameters(),
                          torch::optim::AdamWOptions(o.lr).betas({0.9, 0.95}).weight_decay(o.weight_decay));

  // hidden [B, T, D] pre-norm, tokens [B, T].
  auto forward = [&](const torch::Tensor& hidden, const torch::Tensor& tokens) {
    torch::Tensor embeddings;
    {
      torch::NoGradGuard no_grad;
      embeddings = t.target->embed_image(tokens);
    }
    std::vector<HeadForward> out;
    for (int64_t i = 0; i < heads->count(); ++i) {
      const auto& src = sources[size_t(i)];
      out.push_back({heads->head(i)(hidden.index_select(1, src), embeddings.index_select(1, src)),
                     hidden.index_select(1, src + heads->raster_offset(i))});
    }
    return out;
  };
  auto step_fn = [&](int64_t step) -> StepResult {
    const auto batch = t.batches->batch(step);  // this rank's rows
    const auto out = forward(batch.hidden.to(t.device), batch.tokens.to(t.device));
    StepResult r{torch::zeros({}, torch::TensorOptions().device(t.device)), {}};
    for (int64_t i = 0; i < heads->count(); ++i) {
      auto loss = torch::smooth_l1_loss(out[size_t(i)].prediction, out[size_t(i)].target);
      r.loss = r.loss + loss;
      r.extra[heads->head_name(i) + "_loss"] = loss.detach();
    }
    return r;
  };
  auto eval_fn = [&]() -> nlohmann::json {
    torch::NoGradGuard no_grad;
    heads->eval();
    nlohmann::json record;  // keys "<head>_<measure>" on held-out data, e.g. "v+1_top1"
    std::vector<double> loss(size_t(heads->count())), accept(size_t(heads->count()));
    std::vector<TokenAgreement> agree(size_t(heads->count()));
    for (const auto& b : t.heldout) {
      const auto out = forward(b.hidden, b.tokens);
      for (size_t i = 0; i < out.size(); ++i) {
        const int64_t D = out[i].target.size(-1);
        auto draft =
            t.target->image_logits(t.target->norm(out[i].prediction)).reshape({-1, t.target_config.gpt.vocab_size});
        auto target =
            t.target->image_logits(t.target->norm(out[i].target)).reshape({-1, t.target_config.gpt.vocab_size});
        loss[i] +=
            torch::smooth_l1_loss(out[i].prediction, out[i].target).item<double>() * double(out[i].target.numel() / D);
        // SSD drafts the argmax; speculative sampling at T = 1 (no CFG) accepts it with probability p(draft).
        accept[i] += torch::softmax(target, -1).gather(1, draft.argmax(-1, true)).sum().item<double>();
        agree[i].add(draft, target);
      }
    }
    for (size_t i = 0; i < agree.size(); ++i) {
      const auto name = heads->head_name(int64_t(i));
      const double n = double(agree[i].count);
      record[name + "_loss"] = loss[i] / n;
      record[name + "_top1"] = double(agree[i].top1) / n;
      record[name + "_top3"] = double(agree[i].top3) / n;
      record[name + "_accept"] = accept[i] / n;
    }
    heads->train();
    return record;
  };
  auto metadata = head_metadata("ssd_heads", t.target_config);
  metadata["dataset"] = t.reader->path();
  metadata["horizontal_heads"] = std::to_string(o.horizontal);
  metadata["vertical_heads"] = std::to_string(o.vertical);
  run_training(o, *heads, opt, step_fn, eval_fn, metadata, clip_groups);
}

}  // namespace vispec
