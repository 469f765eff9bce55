#include "eval/quality.h"

#include <fmt/format.h>

#include "core/check.h"
#include "io/fashion_data.h"
#include "models/checkpoints/load.h"

namespace vispec {

Judgement judge_images(Classifier& classifier, const torch::Tensor& images, torch::Device device) {
  torch::NoGradGuard no_grad;
  const bool was_training = classifier->is_training();
  classifier->eval();
  std::vector<torch::Tensor> preds, feats;
  for (int64_t i = 0; i < images.size(0); i += 64) {
    auto x = images.narrow(0, i, std::min<int64_t>(64, images.size(0) - i)).to(device, torch::kFloat32);
    auto f = classifier->features(x);
    preds.push_back(classifier->head(f).argmax(1).to(torch::kCPU));
    feats.push_back(f.to(torch::kCPU));
  }
  classifier->train(was_training);
  if (preds.empty()) return {torch::zeros({0}, torch::kInt64), torch::zeros({0, classifier->config().features})};
  return {torch::cat(preds), torch::cat(feats)};
}

double class_agreement(const torch::Tensor& predictions, const torch::Tensor& class_ids) {
  VISPEC_ASSERT(predictions.numel() == class_ids.numel(), "one class id per prediction");
  if (predictions.numel() == 0) return 0.0;
  return predictions.eq(class_ids.to(torch::kCPU, torch::kInt64)).to(torch::kFloat64).mean().item<double>();
}

nlohmann::json QualityReport::to_json() const {
  return {{"images", images},
          {"class_agreement", class_agreement},
          {"fid", fid},
          {"fid_reference_images", reference_images}};
}

std::string QualityReport::to_line() const {
  return fmt::format("{} images: class agreement {:.4f}, FID {:.3f} (vs {} real test images)", images, class_agreement,
                     fid, reference_images);
}

Classifier load_classifier(const ModelConfig& model, torch::Device device) {
  VISPEC_CHECK(model.has_classifier, model.file, ": no 'classifier' section: this model has no evaluation classifier");
  Classifier c(model.classifier);
  load_weights(*c, model.classifier_weights);
  c->to(device);
  c->eval();
  return c;
}

QualityJudge::QualityJudge(const ModelConfig& model, torch::Device device)
    : classifier_(load_classifier(model, device)), device_(device) {
  reference_ = feature_stats(run(load_fashion_tensors("test", model.image_size()).images).features);
}

QualityReport QualityJudge::judge(const torch::Tensor& images, const torch::Tensor& class_ids) {
  return judge(run(images), class_ids);
}

QualityReport QualityJudge::judge(const Judgement& j, const torch::Tensor& class_ids) {
  QualityReport r;
  r.images = j.predictions.numel();
  r.class_agreement = class_agreement(j.predictions, class_ids);
  r.fid = r.images >= 2 ? frechet_distance(feature_stats(j.features), reference_) : std::nan("");
  r.reference_images = reference_.count;
  return r;
}

}  // namespace vispec
