#include "models/torch_checkpoint.h"

#include <torch/serialize.h>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

TensorMap read_torch_checkpoint(const std::string& path) {
  const std::string bytes = read_file(path);
  c10::IValue value;
  try {
    value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    VISPEC_FAIL(path, ": cannot read torch checkpoint (convert it to safetensors): ", what);
  }
  // Unwrap training checkpoints down to the state dict.
  for (int depth = 0; depth < 2 && value.isGenericDict(); ++depth) {
    auto dict = value.toGenericDict();
    bool unwrapped = false;
    for (const char* key : {"model", "module", "state_dict"}) {
      if (dict.contains(key) && dict.at(key).isGenericDict()) {
        value = dict.at(key);
        unwrapped = true;
        break;
      }
    }
    if (!unwrapped) break;
  }
  VISPEC_CHECK(value.isGenericDict(), path, ": not a state dict");
  TensorMap out;
  for (const auto& item : value.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor()) continue;  // skip args, steps, optimizer entries
    out[item.key().toStringRef()] = item.value().toTensor();
  }
  VISPEC_CHECK(!out.empty(), path, ": holds no tensors");
  return out;
}

void write_torch_checkpoint(const std::string& path, const TensorMap& tensors) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, t] : tensors) dict.insert(name, t.detach().to(torch::kCPU).contiguous());
  const auto bytes = torch::pickle_save(c10::IValue(dict));
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

}  // namespace vispec
