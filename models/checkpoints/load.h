// Moving weights between files and modules, strictly: every parameter and buffer of the module must be in
// the file with the same shape, and every tensor of the file must belong to the module (except names listed
// as ignorable, e.g. LlamaGen's freqs_cis or an unused VQ encoder). Errors name the file and the tensor.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "models/checkpoints/safetensors.h"
#include "models/checkpoints/weight_keys.h"

namespace vispec {

// "fp32" | "bf16" | "fp16" (a model config's dtype) -> the torch dtype.
torch::Dtype model_dtype(const std::string& name);

TensorMap state_dict(const torch::nn::Module& module);
// Weights are one file (.safetensors; .pt/.pth/.bin torch.save checkpoints) or Hugging Face's sharded layout:
// DIR/model.safetensors.index.json or DIR/pytorch_model.bin.index.json naming the shard of every tensor, each
// shard read in turn.
TensorMap read_weights(const std::string& path);  // every tensor, owned, on the CPU
// The files the weights are in: the path itself, or the shards an index names (what the fingerprint hashes).
std::vector<std::string> weight_files(const std::string& path);
// ignore_prefixes: file tensors starting with one of these are skipped without complaint.
void load_state_dict(torch::nn::Module& module, const TensorMap& tensors, const std::string& source,
                     const std::vector<std::string>& ignore_prefixes = {});
// Checks, without copying, that `tensors` fit the module (the errors load_state_dict would give); keys: which
// module tensors may come as one row for all.
void check_state_dict(const torch::nn::Module& module, const TensorMap& tensors, const std::string& source,
                      const std::vector<std::string>& ignore_prefixes = {}, const WeightKeys& keys = {});
// Checks that weights fit the module, from names and shapes only (safetensors headers; torch.save indexes).
// Used before a job writes anything, with modules built on the meta device. keys: which dict of a torch.save
// file, and how file names map onto the module's (models/checkpoints/weight_keys.h); ignore_prefixes apply to mapped
// names.
void check_weights_file(const torch::nn::Module& module, const std::string& path,
                        const std::vector<std::string>& ignore_prefixes = {}, const WeightKeys& keys = {});
// Copies the weights into the module's parameters and buffers, whatever their device and dtype: each file is
// read through its memory map, one shard at a time, never copied whole into host memory first.
void load_weights(torch::nn::Module& module, const std::string& path,
                  const std::vector<std::string>& ignore_prefixes = {}, const WeightKeys& keys = {});
void save_weights(const torch::nn::Module& module, const std::string& path, const Metadata& metadata = {});

}  // namespace vispec
