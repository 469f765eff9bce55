// What a torch.save file holds, checked, without LibTorch: the zip container (models/checkpoints/torch_zip.h), data.pkl
// through the restricted unpickler (models/checkpoints/torch_pickle.h), the state dict chosen inside it, and for each
// of its tensors the dtype, shape, strides and the bytes of its storage, every extent checked against the storage so
// that building the tensor can never read outside the file, and every entry used checked against its zip CRC-32.
// models/checkpoints/torch_checkpoint.h turns this into tensors; fuzz/fuzz_torch_checkpoint.cpp fuzzes all of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/checkpoints/torch_zip.h"

namespace vispec {

struct TorchTensorRecord {
  std::string name;
  std::string dtype;  // safetensors' names: "F32", "BF16", ...
  std::vector<int64_t> shape, stride;
  int64_t offset = 0;  // elements into the storage
  ZipSpan storage;     // the storage's bytes (shared by every view of it)
};

// bytes: the whole file. state_dict_key: the dotted path of the state dict inside the checkpoint ("model",
// "model.sd", "ema"); empty: the checkpoint itself, or what is under "model", "module" or "state_dict" (up to two
// levels), the layouts LlamaGen's and most training scripts save. Entries that are not tensors (args, steps,
// an optimizer) are skipped. Throws one line naming `path`. check_data: also compare every tensor storage's
// CRC-32 with the zip's (a pass over all the data; data.pkl's is always checked): a caller that only needs
// names and shapes, and reads the data later through a checked index, may skip it.
std::vector<TorchTensorRecord> index_torch_checkpoint(const uint8_t* bytes, uint64_t size, const std::string& path,
                                                      const std::string& state_dict_key = "", bool check_data = true);

}  // namespace vispec
