#include "train/fashion_only.h"

#include "core/check.h"
#include "models/model_config.h"

namespace vispec {

void check_fashion_model(const ModelConfig& model, const std::string& trainer) {
  constexpr int64_t kFashionSide = 28;
  VISPEC_CHECK(
      model.vq.in_channels == 1 && model.image_size() >= kFashionSide, model.file, ": ", trainer,
      " trains on Fashion-MNIST (1-channel 28x28 images) only, and this model's images are ", model.vq.in_channels,
      "-channel at ", model.image_size(), "x", model.image_size(),
      " px (train gpt and train mulo-resamplers read an image folder with --images; the heads train on distillation "
      "data)");
}

}  // namespace vispec
