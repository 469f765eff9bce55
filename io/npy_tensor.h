// A .npy file as a torch tensor (CPU, the file's dtype): the numeric dtypes numpy writes for features,
// token grids, images and masks.
#pragma once

#include <torch/torch.h>

#include <string>

#include "io/npy.h"

namespace vispec {

// Throws an Error naming the file for a dtype outside float16/32/64, int32/64, uint8 and bool.
torch::Tensor npy_to_tensor(NpyArray array, const std::string& path);
inline torch::Tensor read_npy_tensor(const std::string& path) { return npy_to_tensor(read_npy(path), path); }

}  // namespace vispec
