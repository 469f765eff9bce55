#include "models/load.h"

#include <sstream>

#include "core/check.h"
#include "models/torch_checkpoint.h"

namespace vispec {

namespace {
std::string shape_str(c10::IntArrayRef s) {
  std::ostringstream o;
  o << s;
  return o.str();
}
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

torch::Dtype model_dtype(const std::string& name) {
  if (name == "fp32") return torch::kFloat32;
  if (name == "bf16") return torch::kBFloat16;
  if (name == "fp16") return torch::kFloat16;
  VISPEC_FAIL("unknown model dtype '", name, "' (expected fp32, bf16 or fp16)");
}

TensorMap state_dict(const torch::nn::Module& module) {
  TensorMap out;
  for (const auto& p : module.named_parameters()) out[p.key()] = p.value();
  for (const auto& b : module.named_buffers()) out[b.key()] = b.value();
  return out;
}

namespace {
bool is_torch_checkpoint(const std::string& path) {
  return ends_with(path, ".pt") || ends_with(path, ".pth") || ends_with(path, ".bin");
}
}  // namespace

TensorMap read_weights(const std::string& path) {
  if (ends_with(path, ".safetensors")) return read_safetensors(path);
  if (is_torch_checkpoint(path)) return read_torch_checkpoint(path);
  VISPEC_FAIL(path, ": unknown weight format (expected .safetensors, .pt, .pth or .bin)");
}

void check_state_dict(const torch::nn::Module& module, const TensorMap& tensors, const std::string& source,
                      const std::vector<std::string>& ignore_prefixes) {
  const auto own = state_dict(module);
  for (const auto& [name, t] : tensors) {
    if (own.count(name)) continue;
    bool ignored = false;
    for (const auto& p : ignore_prefixes) ignored = ignored || name.rfind(p, 0) == 0;
    VISPEC_CHECK(ignored, source, ": tensor '", name, "' does not belong to the model (wrong config?)");
  }
  for (const auto& [name, dst] : own) {
    auto it = tensors.find(name);
    VISPEC_CHECK(it != tensors.end(), source, ": tensor '", name, "' is missing (model expects shape ",
                 shape_str(dst.sizes()), ")");
    VISPEC_CHECK(it->second.sizes() == dst.sizes(), source, ": tensor '", name, "' has shape ",
                 shape_str(it->second.sizes()), ", model expects ", shape_str(dst.sizes()));
  }
}

void check_weights_file(const torch::nn::Module& module, const std::string& path,
                        const std::vector<std::string>& ignore_prefixes) {
  if (ends_with(path, ".safetensors")) {
    check_state_dict(module, MappedSafetensors(path).tensors(), path, ignore_prefixes);
  } else if (is_torch_checkpoint(path)) {
    const MappedFile file(path);
    check_state_dict(module, torch_checkpoint_views(file, path), path, ignore_prefixes);
  }
}

void load_state_dict(torch::nn::Module& module, const TensorMap& tensors, const std::string& source,
                     const std::vector<std::string>& ignore_prefixes) {
  check_state_dict(module, tensors, source, ignore_prefixes);
  torch::NoGradGuard no_grad;
  for (auto& [name, dst] : state_dict(module)) dst.copy_(tensors.at(name));
}

void load_weights(torch::nn::Module& module, const std::string& path, const std::vector<std::string>& ignore_prefixes) {
  if (ends_with(path, ".safetensors")) {
    // Straight from the mapped file into the parameters, converted to their device and dtype on the way.
    const MappedSafetensors file(path);
    load_state_dict(module, file.tensors(), path, ignore_prefixes);
    return;
  }
  if (is_torch_checkpoint(path)) {  // likewise from views into the mapped checkpoint
    const MappedFile file(path);
    load_state_dict(module, torch_checkpoint_views(file, path), path, ignore_prefixes);
    return;
  }
  load_state_dict(module, read_weights(path), path, ignore_prefixes);
}

void save_weights(const torch::nn::Module& module, const std::string& path, const Metadata& metadata) {
  write_safetensors(path, state_dict(module), metadata);
}

}  // namespace vispec
