// Images as tensors <-> the bytes written to PNG. One mapping for the whole system, so that an image judged
// in memory (vispec bench) and the same image read back from its PNG (vispec eval) are the same numbers.
#pragma once

#include <torch/torch.h>

namespace vispec {

// [B, C, H, W] float in ~[-1, 1] -> [B, H, W, C] uint8 on the CPU, LlamaGen's rounding:
// clamp to [-1, 1], then (x + 1) * 127.5 + 0.5, truncated.
torch::Tensor images_to_bytes(const torch::Tensor& images);
// [B, H, W, C] uint8 -> [B, C, H, W] float32, x / 127.5 - 1 (the map io/fashion_data applies to real images).
torch::Tensor bytes_to_images(const torch::Tensor& bytes);

}  // namespace vispec
