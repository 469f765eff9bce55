// LlamaGen-style torch .pt checkpoints (zip-format torch.save of a state dict, possibly wrapped in
// {"model": ...}, {"module": ...}, {"state_dict": ...} or {"ema": ...}). research/models.md §1.8 and §6.2:
// LibTorch's unpickler reads plain fp32/bf16 state dicts; FSDP checkpoints need a one-time conversion to
// safetensors in Python.
#pragma once

#include <string>

#include "models/safetensors.h"

namespace vispec {

TensorMap read_torch_checkpoint(const std::string& path);
// Writes a state dict in torch.save's zip format (readable by torch.load and by read_torch_checkpoint).
void write_torch_checkpoint(const std::string& path, const TensorMap& tensors);

}  // namespace vispec
