#include "train/head_training.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "io/distill_schema.h"
#include "models/checkpoints/load.h"
#include "models/checkpoints/file_extras.h"

namespace vispec {

HeadTraining prepare_head_training(const HeadTrainOptions& o) {
  HeadTraining t;
  t.device = prepare_training(o);
  t.target_config = load_model_config(o.config);
  const std::string index = std::filesystem::is_directory(o.data) ? distill_index_path(o.data) : o.data;
  t.reader = std::make_shared<DistillReader>(index);
  check_dataset_fits(*t.reader, t.target_config);  // before loading weights: a mismatch is named as such
  t.target = Gpt(t.target_config.gpt, torch::TensorOptions(), /*random_init=*/false);
  {
    ShareWeightsOnNode scope(o.node_weights.get());
    load_weights(*t.target, t.target_config.gpt_weights, kGptFileExtras, t.target_config.gpt_keys);
  }
  t.target->to(t.device);
  t.target->eval();
  for (auto& p : t.target->parameters()) p.requires_grad_(false);
  t.split = split_units(*t.reader, o.heldout_units);
  t.batches = std::make_unique<DistillBatches>(t.reader, t.split.train, o.batch_size, o.window_rows, o.null_fraction,
                                               o.seed, o.shard());
  for (auto& b : heldout_batches(*t.reader, t.split.heldout, o.batch_size, o.heldout_rows))
    t.heldout.push_back({b.hidden.to(t.device), b.tokens.to(t.device)});
  return t;
}

void HeadTraining::log_data() const {
  spdlog::info("data {}: {} samples in {} units ({} streams, {}); training on {} units ({} samples), holding out {}",
               reader->path(), reader->rows(), reader->units().size(), reader->streams(), dtype_name(reader->dtype()),
               split.train.size(), batches->rows(), split.heldout.size());
}

void TokenAgreement::add(const torch::Tensor& draft_logits, const torch::Tensor& target_logits) {
  const auto greedy = target_logits.argmax(-1, /*keepdim=*/true);  // [N, 1]
  const auto top3 = std::get<1>(draft_logits.topk(3, -1));         // [N, 3]
  top1 += top3.narrow(1, 0, 1).eq(greedy).sum().item<int64_t>();
  this->top3 += top3.eq(greedy).any(-1).sum().item<int64_t>();
  count += draft_logits.size(0);
}

}  // namespace vispec
