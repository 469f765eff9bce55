// Judging images with the evaluation classifier: class agreement (the fraction of images whose predicted
// class is the class they were prompted with) and FID against the real Fashion-MNIST test images in the
// classifier's feature space. Images are judged as they are written to disk: quantised to 8 bits exactly as
// the PNG writer does (io/image_tensor.h), so `vispec eval` on PNGs and `vispec bench` on tensors agree.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "eval/fid.h"
#include "models/classifier.h"
#include "models/model_config.h"

namespace vispec {

struct Judgement {
  torch::Tensor predictions;  // [N] int64
  torch::Tensor features;     // [N, F] float32
};

// Runs the classifier over images [N, C, H, W] in [-1, 1] in batches of 64 (CPU convolutions slow down a lot
// beyond that), in eval mode; restores the module's training flag.
Judgement judge_images(Classifier& classifier, const torch::Tensor& images, torch::Device device);
double class_agreement(const torch::Tensor& predictions, const torch::Tensor& class_ids);

struct QualityReport {
  int64_t images = 0;
  double class_agreement = 0;
  double fid = 0;
  int64_t reference_images = 0;  // real test images FID was measured against

  nlohmann::json to_json() const;
  std::string to_line() const;  // "40 images: class agreement 0.925, FID 45.31 (vs 10000 real test images)"
};

// The classifier of a model config with the reference statistics of the real test split, computed once.
class QualityJudge {
 public:
  QualityJudge(const ModelConfig& model, torch::Device device);
  QualityReport judge(const torch::Tensor& images, const torch::Tensor& class_ids);
  QualityReport judge(const Judgement& judgement, const torch::Tensor& class_ids);
  Judgement run(const torch::Tensor& images) { return judge_images(classifier_, images, device_); }
  const FeatureStats& reference() const { return reference_; }

 private:
  Classifier classifier_{nullptr};
  torch::Device device_;
  FeatureStats reference_;
};

Classifier load_classifier(const ModelConfig& model, torch::Device device);

}  // namespace vispec
