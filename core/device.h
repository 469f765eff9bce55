// Device choice: "auto" picks CUDA when LibTorch was built with it and a GPU is visible, else CPU.
#pragma once

#include <cstdint>
#include <string>

namespace c10 {
struct Device;
}

namespace vispec {
// name: "auto", "cpu", "cuda" or "cuda:N". For "auto" and "cuda", the GPU is local_rank mod visible GPUs: one
// rank per GPU when a node runs as many ranks as it has GPUs (CUDA_VISIBLE_DEVICES narrows the choice). "auto"
// takes the CPU on a node without GPUs (or whose GPUs CUDA_VISIBLE_DEVICES hides, with one warning line), and
// fails in one line on a node whose GPUs vispec cannot use (a driver too old for this build, a build without
// CUDA): "cpu" asks for the CPU there.
// A CUDA choice also becomes the process's current device, so that nothing (cuBLAS handles, the caching
// allocator, NCCL later) lands on GPU 0 by default: call this before allocating anything.
c10::Device pick_device(const std::string& name, int local_rank = 0);
// Sets LibTorch's intra-op threads (0 keeps LibTorch's default); more than the node's cores are cut to
// them, with one warning line. Returns the count set (0: the default kept). Every --threads and `threads:` is at most
// kMaxThreads (a typo's 100000 threads would take the machine's process ids).
inline constexpr int kMaxThreads = 1024;
int set_threads(int threads);
// What the device is, for a job's identity: "cpu" or the GPU's model name ("NVIDIA H100 80GB HBM3").
std::string device_model(const c10::Device& device);
// Bytes of memory free on `device` now: the GPU's (cudaMemGetInfo), or the host's available memory
// (/proc/meminfo's MemAvailable) for a CPU. What `batch_size: auto` sizes a batch by.
int64_t free_device_memory(const c10::Device& device);
// LibTorch's version and the CUDA version it was built with ("libtorch 2.11.0, cuda 13.0" or ", cuda none").
std::string software_versions();
// Waits until every kernel queued on `device` has run (nothing to wait for on a CPU): what a wall-clock timing
// of device work ends with.
void synchronize_device(const c10::Device& device);
// Whether this build can drive a GPU and one is visible (tests and benchmarks skip CUDA cases otherwise).
bool cuda_usable();
// Why not, in a few words ("no CUDA device visible", "the NVIDIA driver supports CUDA 12.4, this build needs
// 13.0", ...), or "" when it is usable. device: auto on a machine with an NVIDIA driver warns with it once.
std::string cuda_unusable_reason();
}  // namespace vispec
