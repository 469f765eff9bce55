// A model config's VQ, ready to encode and decode: built from its config, filled from its weights file (LlamaGen's
// checkpoint buffers accepted, models/checkpoints/file_extras.h), moved to the device in float32 whatever the
// GPT's dtype (the pixels stay those of the reference decoder), in eval mode. Inside a ShareWeightsOnNode scope the
// file is read once per node (models/checkpoints/node_weights.h).
#pragma once

#include <torch/torch.h>

#include "models/vq/vq.h"

namespace vispec {

struct ModelConfig;

VqModel load_vq(const ModelConfig& config, torch::Device device);

}  // namespace vispec
