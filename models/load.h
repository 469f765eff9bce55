// Moving weights between files and modules, strictly: every parameter and buffer of the module must be in
// the file with the same shape, and every tensor of the file must belong to the module (except names listed
// as ignorable, e.g. LlamaGen's freqs_cis or an unused VQ encoder). Errors name the file and the tensor.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "models/safetensors.h"

namespace vispec {

// "fp32" | "bf16" | "fp16" (a model config's dtype) -> the torch dtype.
torch::Dtype model_dtype(const std::string& name);

TensorMap state_dict(const torch::nn::Module& module);
// Reads .safetensors, or .pt/.pth/.bin torch checkpoints.
TensorMap read_weights(const std::string& path);
// ignore_prefixes: file tensors starting with one of these are skipped without complaint.
void load_state_dict(torch::nn::Module& module, const TensorMap& tensors, const std::string& source,
                     const std::vector<std::string>& ignore_prefixes = {});
// Checks, without copying, that `tensors` fit the module (the errors load_state_dict would give).
void check_state_dict(const torch::nn::Module& module, const TensorMap& tensors, const std::string& source,
                      const std::vector<std::string>& ignore_prefixes = {});
// Checks that a safetensors weights file fits the module, reading only the file's header (other formats are
// checked when loaded). Used before a job writes anything, with modules built on the meta device.
void check_weights_file(const torch::nn::Module& module, const std::string& path,
                        const std::vector<std::string>& ignore_prefixes = {});
// Copies a file's tensors into the module's parameters and buffers, whatever their device and dtype (a
// safetensors file is read through its memory map, never copied whole into host memory first).
void load_weights(torch::nn::Module& module, const std::string& path,
                  const std::vector<std::string>& ignore_prefixes = {});
void save_weights(const torch::nn::Module& module, const std::string& path, const Metadata& metadata = {});

}  // namespace vispec
