// The trainers of the VQ and the classifier read Fashion-MNIST (1-channel 28x28 images padded to the model's image
// size), and so do those of the GPT (target, SD's drafter, MuLo-SD's drafter) and MuLo-SD's resamplers unless
// given an image folder or LlamaGen's codes. A model whose VQ takes other images (LlamaGen's: RGB at 256 or 384 px)
// is refused in one line before any work, instead of failing inside LibTorch. The head trainers (eagle-head,
// ssd-heads) take any model's distillation data.
#pragma once

#include <string>

namespace vispec {

struct ModelConfig;

// trainer: the subcommand, for the message ("train vq").
void check_fashion_model(const ModelConfig& model, const std::string& trainer);

}  // namespace vispec
