// Trains the evaluation classifier (models/classifier.h) on Fashion-MNIST: cross-entropy, no augmentation
// (the generated images it will judge come from the same unflipped, uncropped distribution).
#include <spdlog/spdlog.h>

#include "core/check.h"
#include "eval/quality.h"
#include "io/fashion_data.h"
#include "models/model_config.h"
#include "train/fashion_only.h"
#include "train/trainers.h"

namespace vispec {

void train_classifier(const TrainOptions& o) {
  const auto model = load_model_config(o.config);
  check_fashion_model(model, "train classifier");
  VISPEC_CHECK(model.has_classifier, o.config, ": no 'classifier' section to train");
  const auto device = prepare_training(o);
  auto train = load_fashion_tensors("train", model.image_size());
  auto test = load_fashion_tensors("test", model.image_size());
  Classifier net(model.classifier);
  net->to(device);
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
  spdlog::info("train classifier: {} images, {} steps of {}, device {}", train.images.size(0), o.steps, o.batch_size,
               device.str());
  // Data-parallel with BatchNorm: each rank normalises over its own rows (no synchronised statistics), so the
  // loss curve depends on the rank count, unlike the other trainers'.
  const auto shard = o.shard();
  auto step_fn = [&](int64_t step) -> StepResult {
    auto idx = shard.rows(batch_indices(o.seed, step, train.images.size(0), o.batch_size));
    auto logits = net->forward(train.images.index_select(0, idx).to(device));
    return {torch::cross_entropy_loss(logits, train.labels.index_select(0, idx).to(device)), {}};
  };
  auto eval_fn = [&]() -> nlohmann::json {
    return {{"test_accuracy", class_agreement(judge_images(net, test.images, device).predictions, test.labels)}};
  };
  run_training(o, *net, opt, step_fn, eval_fn, {{"kind", "classifier"}});
}

}  // namespace vispec
