// Fashion-MNIST as tensors for the embedded model: 28x28 images padded to 32x32 (so a x2 VQ gives LlamaGen's
// 16x16 = 256-token grid), scaled to [-1, 1] with the background at -1.
#pragma once

#include <torch/torch.h>

#include <string>

namespace vispec {

struct FashionTensors {
  torch::Tensor images;  // [N, 1, 32, 32] float32 in [-1, 1]
  torch::Tensor labels;  // [N] int64
};

FashionTensors load_fashion_tensors(const std::string& split, int64_t image_size = 32);

}  // namespace vispec
