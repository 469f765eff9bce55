// The evaluation classifier: a small CNN that judges generated images. Its logits give class agreement (does
// the image show the class it was prompted with?) and its penultimate features are the space FID is measured
// in (the role Inception-v3 plays for ImageNet; no pretrained Inception can be had here).
//
//   x [B, C, S, S] in [-1, 1]
//   -> 3 x (conv3x3 -> BatchNorm -> ReLU -> maxpool 2)    widths w, 2w, 4w   (S -> S/8)
//   -> flatten -> fc (features) -> ReLU                   = features(x), the FID space
//   -> dropout (training only) -> fc (classes)            = forward(x), logits
#pragma once

#include <torch/torch.h>

#include "models/classifier_config.h"

namespace vispec {

struct ClassifierImpl : torch::nn::Module {
  explicit ClassifierImpl(const ClassifierConfig& config);
  torch::Tensor features(const torch::Tensor& x);  // [B, features], after the ReLU
  torch::Tensor forward(const torch::Tensor& x);   // [B, classes] logits
  const ClassifierConfig& config() const { return config_; }

  torch::nn::Sequential trunk{nullptr};
  torch::nn::Linear fc{nullptr}, head{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  ClassifierConfig config_;
};
TORCH_MODULE(Classifier);

}  // namespace vispec
