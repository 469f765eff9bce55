// A training run's checkpoint, written and read as one set (train/train_loop.h's loop saves and resumes it).
//
//   OUT/checkpoints/step-<8 digits>/weights.safetensors   the model's weights
//                                  /optimizer.pt          the optimizer's state (LibTorch archive)
//                                  /state.json            {"step", "options", "files": {name: {bytes, crc32}}, ...}
//
// A checkpoint is written under step-<N>.tmp.<pid>, every file fsynced, then the directory is renamed into
// place: a directory named step-<N> is whole, and a kill at any moment leaves the previous one (the older
// ones are removed only after the new one is in place). A resume takes the highest step, checks its files
// against state.json's sizes and CRC-32s, and continues the same training: the options that decide its course
// (batch size, learning rate and warm-up, seed) must be the checkpoint's unless --resume-with-other-options
// says so, and --steps may not stop before the checkpoint's step.
// A run directory of an older vispec (checkpoint.safetensors, optimizer.pt and state.json in OUT itself) still
// resumes, with a warning that its three files were not written as one set.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>

namespace vispec {

struct TrainOptions;

// Returns the step to continue from (0 when the run directory holds no checkpoint).
int64_t resume_checkpoint(const TrainOptions& o, torch::nn::Module& model, torch::optim::Optimizer& opt);
// Writes the checkpoint of `step` (extra: the evaluation to record beside it) and removes the older ones.
void save_checkpoint(const TrainOptions& o, const torch::nn::Module& model, torch::optim::Optimizer& opt, int64_t step,
                     const nlohmann::json& extra = {});

}  // namespace vispec
