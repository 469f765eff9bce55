// The networks of a model config, loaded once per worker onto its device, in eval mode.
#pragma once

#include <torch/torch.h>

#include "models/gpt.h"
#include "models/model_config.h"
#include "models/vq.h"

namespace vispec {

struct LoadedModels {
  Gpt gpt{nullptr};
  VqModel vq{nullptr};
};

LoadedModels load_models(const ModelConfig& config, torch::Device device);

}  // namespace vispec
