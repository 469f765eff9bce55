// safetensors read (mmap) and write (the Hugging Face safetensors format).
//
//   [u64 little-endian N][N bytes JSON header, space-padded to 8][data]
//   header: {"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}}
// The reader enforces the reference reader's rules (models/checkpoints/safetensors_header.h: offsets tile the data
// exactly, sizes match shapes) and names the file and the tensor in every error. The writer writes under a
// temporary name and renames.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

namespace vispec {

using TensorMap = std::map<std::string, torch::Tensor>;
using Metadata = std::map<std::string, std::string>;

// A safetensors file mapped read-only and checked. tensors() are CPU views into the mapping, valid while this
// object lives: copying each into a model's parameters (any device, any dtype) reads the file once and never
// holds a second host copy of it.
class MappedSafetensors {
 public:
  explicit MappedSafetensors(const std::string& path);
  const TensorMap& tensors() const { return tensors_; }
  const Metadata& metadata() const { return metadata_; }

 private:
  std::shared_ptr<void> mapping_;  // unmaps on destruction
  TensorMap tensors_;
  Metadata metadata_;
};

// The LibTorch dtype of a safetensors dtype name ("F32", "BF16", ...); throws naming the file and tensor.
torch::Dtype dtype_from_name(const std::string& path, const std::string& tensor, const std::string& name);

// Every tensor of the file as an owned CPU tensor.
TensorMap read_safetensors(const std::string& path, Metadata* metadata = nullptr);
void write_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata = {});

}  // namespace vispec
