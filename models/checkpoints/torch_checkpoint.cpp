#include "models/checkpoints/torch_checkpoint.h"

#include <torch/serialize.h>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/mapped_file.h"
#include "models/checkpoints/torch_checkpoint_index.h"

namespace vispec {

TensorMap torch_checkpoint_views(const MappedFile& file, const std::string& path, const std::string& state_dict_key,
                                 bool check_data) {
  TensorMap out;
  for (const auto& t : index_torch_checkpoint(file.data(), file.size(), path, state_dict_key, check_data)) {
    const auto dtype = dtype_from_name(path, t.name, t.dtype);
    const auto storage_numel = int64_t(t.storage.size) / int64_t(c10::elementSize(dtype));
    // The index checked the view's extent against the storage, and the storage against the file.
    const auto whole =
        torch::from_blob(const_cast<uint8_t*>(t.storage.data), {storage_numel}, torch::TensorOptions().dtype(dtype));
    out[t.name] = whole.as_strided(t.shape, t.stride, t.offset);
  }
  return out;
}

TensorMap read_torch_checkpoint(const std::string& path, const std::string& state_dict_key) {
  const MappedFile file(path);
  TensorMap out;
  for (auto& [name, view] : torch_checkpoint_views(file, path, state_dict_key))
    out[name] = view.clone(at::MemoryFormat::Contiguous);  // owned: the file is unmapped on return
  return out;
}

void write_torch_checkpoint(const std::string& path, const TensorMap& tensors) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, t] : tensors) dict.insert(name, t.detach().to(torch::kCPU).contiguous());
  const auto bytes = torch::pickle_save(c10::IValue(dict));
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

}  // namespace vispec
