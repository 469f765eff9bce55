// The token sequences `train gpt` learns from, with their classes, from one of three sources:
//   Fashion-MNIST    the embedded model's data, tokenised by the model's VQ (the default)
//   --images DIR     an image folder in ImageNet's layout (train/image_folder.h), tokenised by the model's VQ
//   --codes DIR      the code files LlamaGen's extract_codes_c2i.py writes: DIR/<dataset><size>_codes/<i>.npy
//                    ([1, augmentations, T] tokens) and DIR/<dataset><size>_labels/<i>.npy ([1] class); every
//                    augmentation (a flip, or the ten crops) is a sequence of its own
// Images are tokenised once into the run directory (tokens.safetensors, with what it was made from: a cache of
// other data or another model is refused, never overwritten), a folder's by every rank a share, Fashion-MNIST's
// and code files by rank 0; every rank and a resumed run then read that. Every tenth image or code file is held
// out for the test loss (train/image_folder.h: held_out).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "train/train_loop.h"

namespace vispec {

struct ModelConfig;

struct TokenData {
  torch::Tensor train_tokens, train_labels;  // [N, T] integers, [N] int64
  torch::Tensor test_tokens, test_labels;
};

// half: the images at half resolution (MuLo-SD's drafter), through the same VQ. tokens: the sequence length the
// trained GPT expects (its grid squared), which code files must have; num_classes: the classes it knows.
TokenData load_token_data(const TrainOptions& o, const ModelConfig& model, bool half, int64_t tokens,
                          int64_t num_classes, torch::Device device);

}  // namespace vispec
