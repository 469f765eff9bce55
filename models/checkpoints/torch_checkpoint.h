// torch.save checkpoints (.pt, .pth, .bin; .ckpt, as PyTorch Lightning names them), read by vispec's own zip reader and
// restricted unpickler (models/checkpoints/torch_checkpoint_index.h): state dicts as torch.save writes them
// (OrderedDict), bare or inside the layouts training scripts save ({"model": ...}, {"state_dict": ...}, {"module":
// ...}; others, such as
// {"model": {"sd": ...}} or {"ema": ...}, through state_dict_key); tensors of every dtype, shared storages,
// offsets and strides. Nothing in the file is executed;
// a global outside the short list a checkpoint needs is refused in one line naming it.
#pragma once

#include <string>

#include "io/mapped_file.h"
#include "models/checkpoints/safetensors.h"

namespace vispec {

// state_dict_key: see index_torch_checkpoint (empty: the checkpoint, or its "model", "module" or "state_dict").
TensorMap read_torch_checkpoint(const std::string& path, const std::string& state_dict_key = "");
// The same tensors as views into the mapped file (valid while `file` lives): loading copies each straight into
// a parameter, with no second host copy of the checkpoint.
// check_data: see index_torch_checkpoint.
TensorMap torch_checkpoint_views(const MappedFile& file, const std::string& path,
                                 const std::string& state_dict_key = "", bool check_data = true);
// Writes a state dict in torch.save's zip format (readable by torch.load and by read_torch_checkpoint).
void write_torch_checkpoint(const std::string& path, const TensorMap& tensors);

}  // namespace vispec
