#include "io/image_tensor.h"

namespace vispec {

torch::Tensor images_to_bytes(const torch::Tensor& images) {
  auto x = images.detach().to(torch::kCPU, torch::kFloat32).clamp(-1, 1).add(1).mul(127.5).add(0.5);
  return x.to(torch::kUInt8).permute({0, 2, 3, 1}).contiguous();
}

torch::Tensor bytes_to_images(const torch::Tensor& bytes) {
  return bytes.permute({0, 3, 1, 2}).to(torch::kFloat32).div(127.5).sub(1.0).contiguous();
}

}  // namespace vispec
