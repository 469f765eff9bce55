// Device choice: "auto" picks CUDA when LibTorch was built with it and a GPU is visible, else CPU.
#pragma once

#include <string>

namespace c10 { struct Device; }

namespace vispec {
// name: "auto", "cpu", "cuda" or "cuda:N". For "auto" and "cuda", the GPU is local_rank mod visible GPUs: one
// rank per GPU when a node runs as many ranks as it has GPUs (CUDA_VISIBLE_DEVICES narrows the choice).
c10::Device pick_device(const std::string& name, int local_rank = 0);
// Sets LibTorch's intra-op threads (0 keeps LibTorch's default).
void set_threads(int threads);
}  // namespace vispec
