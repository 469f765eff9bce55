// The networks of a model config, loaded once per worker onto its device, in eval mode.
#pragma once

#include <torch/torch.h>

#include "models/gpt/gpt.h"
#include "models/model_config.h"
#include "models/vq/vq.h"

namespace vispec {

struct LoadedModels {
  Gpt gpt{nullptr};
  VqModel vq{nullptr};
};

LoadedModels load_models(const ModelConfig& config, torch::Device device);
// Checks that the GPT's and the VQ's weight files fit the config (names and shapes, from the files' headers;
// the GPT is built on the meta device, so nothing of its size is allocated): run before a job writes anything.
void check_model_weights(const ModelConfig& config);

}  // namespace vispec
