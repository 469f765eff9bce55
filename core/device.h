// Device choice: "auto" picks CUDA when LibTorch was built with it and a GPU is visible, else CPU.
#pragma once

#include <string>

namespace c10 { struct Device; }

namespace vispec {
// name: "auto", "cpu", "cuda" or "cuda:N". local_rank picks the GPU (local_rank mod visible GPUs) for "auto".
c10::Device pick_device(const std::string& name, int local_rank = 0);
// Sets LibTorch's intra-op threads (0 keeps LibTorch's default).
void set_threads(int threads);
}  // namespace vispec
