// Where a decode step's device time goes, kernel by kernel: LibTorch's profiler (Kineto, which reads CUPTI's
// kernel records on CUDA, those of replayed CUDA graphs included) around a stretch of work, summed by kernel
// name. `vispec step-cost --profile-steps N` profiles two decodes that differ by N steps and divides the
// difference by N, so the prefill and the warm-up drop out and what remains is one step's kernels.
// On a CPU there are no kernels: the same table lists the ATen operators' CPU time, and an operator called
// inside another is counted in both (the table is then a rough guide only).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vispec {

struct KernelTime {
  std::string name;  // the kernel's (demangled) name, or the operator's on a CPU
  double calls = 0;  // launches (per step after per_step)
  double us = 0;     // device time, microseconds (per step after per_step)
};

// Runs `work` under the profiler. cuda: time the device's kernels and copies; else the CPU's operators.
// Sorted by time, longest first.
std::vector<KernelTime> profile_kernels(const std::function<void()>& work, bool cuda);

// (longer - shorter) / steps, name by name; names whose calls do not grow are dropped. Sorted by time.
std::vector<KernelTime> per_step(const std::vector<KernelTime>& longer, const std::vector<KernelTime>& shorter,
                                 int64_t steps);

// What a kernel is, from its name: "matmul" (cuBLAS's and kernels/linear.cu's products), "attention"
// (LibTorch's and kernels/attend_cache.cu's), "vispec" (the other kernels/), "copy" (memcpy, memset) or "aten"
// (LibTorch's other kernels).
std::string kernel_class(const std::string& name);

}  // namespace vispec
