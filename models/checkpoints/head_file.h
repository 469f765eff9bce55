// What a draft-head file (safetensors) says about the target it was trained for, so that a head is never
// used with a target it does not fit: the metadata written by the trainers and the check made by loaders.
#pragma once

#include <string>

#include "models/model_config.h"
#include "models/checkpoints/safetensors.h"

namespace vispec {

// kind ("eagle_head", "ssd_heads"), model (the config's name), hidden_dim, vocab_size, grid_size, hidden_kind.
Metadata head_metadata(const std::string& kind, const ModelConfig& target);

// Throws one line naming `path` and the first field where the head and the target differ.
void check_head_file(const Metadata& metadata, const std::string& path, const std::string& kind,
                     const ModelConfig& target);

}  // namespace vispec
