#include "models/classifier.h"

#include "core/check.h"

namespace vispec {

ClassifierImpl::ClassifierImpl(const ClassifierConfig& c) : config_(c) {
  VISPEC_ASSERT(c.image_size % 8 == 0, "classifier image_size must be a multiple of 8");
  namespace nn = torch::nn;
  trunk = register_module("trunk", nn::Sequential());
  int64_t in = c.in_channels;
  for (int64_t out : {c.width, 2 * c.width, 4 * c.width}) {
    trunk->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, 3).padding(1).bias(false)));
    trunk->push_back(nn::BatchNorm2d(out));
    trunk->push_back(nn::ReLU());
    trunk->push_back(nn::MaxPool2d(2));
    in = out;
  }
  const int64_t side = c.image_size / 8;
  fc = register_module("fc", nn::Linear(in * side * side, c.features));
  dropout = register_module("dropout", nn::Dropout(c.dropout));
  head = register_module("head", nn::Linear(c.features, c.num_classes));
}

torch::Tensor ClassifierImpl::features(const torch::Tensor& x) { return torch::relu(fc(trunk->forward(x).flatten(1))); }

torch::Tensor ClassifierImpl::forward(const torch::Tensor& x) { return head(dropout(features(x))); }

}  // namespace vispec
