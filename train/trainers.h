// Trainers for the embedded model (CPU or CUDA, resumable). Each reads its architecture from a model config.
#pragma once

#include "train/head_training.h"
#include "train/train_loop.h"

namespace vispec {

// The VQ tokenizer on Fashion-MNIST: reconstruction MSE + codebook + commitment losses.
void train_vq(const TrainOptions& options);
// A class-conditional GPT (the config's target, --drafter, --mulo) on VQ tokens: Fashion-MNIST's, an image
// folder's or LlamaGen's extracted codes (train/token_data.h).
void train_gpt(const TrainOptions& options);
// The evaluation classifier (class agreement and the FID feature space) on Fashion-MNIST.
void train_classifier(const TrainOptions& options);
// Draft heads for the config's target, from a self-distillation dataset (a job's distill: output).
void train_eagle_head(const HeadTrainOptions& options);
void train_ssd_heads(const HeadTrainOptions& options);
// MuLo-SD's up- and down-sampler U_2 / D_2 between the target's grid and half of it, through the frozen VQ, on
// Fashion-MNIST or an image folder;
// token_weight > 0 adds a cross-entropy on the nearest-code tokens (train/train_mulo_resamplers.cpp).
void train_mulo_resamplers(const TrainOptions& options, double token_weight);

}  // namespace vispec
