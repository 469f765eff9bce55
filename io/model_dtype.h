// The inference precisions a model config's `dtype` (or a job's model.dtype) may name. Plain strings here, so
// that job files are checked without LibTorch; models/checkpoints/load.h maps them to torch dtypes.
#pragma once

#include <string>

namespace vispec {

inline bool is_model_dtype(const std::string& name) { return name == "fp32" || name == "bf16" || name == "fp16"; }

}  // namespace vispec
