// The evaluation classifier's shape (models/classifier.h), apart from the module: model configs hold it
// without LibTorch.
#pragma once

#include <cstdint>

namespace vispec {

struct ClassifierConfig {
  int64_t in_channels = 1;
  int64_t image_size = 32;  // must be a multiple of 8
  int64_t num_classes = 10;
  int64_t width = 32;
  int64_t features = 128;
  double dropout = 0.3;
};

}  // namespace vispec
