// safetensors read (mmap) and write (huggingface/safetensors format; research/models.md §6.1).
//
//   [u64 little-endian N][N bytes JSON header, space-padded to 8][data]
//   header: {"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}}
// The reader enforces the reference reader's rules (offsets tile the data exactly, sizes match shapes) and
// names the file and the tensor in every error. The writer writes under a temporary name and renames.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>

namespace vispec {

using TensorMap = std::map<std::string, torch::Tensor>;
using Metadata = std::map<std::string, std::string>;

// Every tensor of the file as an owned CPU tensor.
TensorMap read_safetensors(const std::string& path, Metadata* metadata = nullptr);
void write_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata = {});

}  // namespace vispec
