// When the fused operators (kernels/fused_ops.h) run, and the check that protects a GPU user from a kernel
// nobody has run on their card: before a device and dtype's first fused forward, each CUDA kernel runs on
// test inputs beside its CPU reference; if any disagrees (or fails to launch), one warning line says so and
// that device and dtype keep the composite ATen formulas, which are slower but right.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace at { class Tensor; }

namespace vispec::kernels {

// The kernels a run with this device and dtype computes with, which decide its outputs' last bits, so the
// job's identity records it: "fused-1" (bump the number whenever a kernel's arithmetic changes) or
// "composite" (a CUDA device whose kernels were not built or failed their check). On a GPU the first call
// runs the check.
std::string kernel_set(const c10::Device& device, c10::ScalarType dtype);

// Whether a forward over x takes the fused operators: no gradient is being recorded (they have none), no
// CompositeOnly is alive on this thread, and x's device and dtype use the "fused" kernel set.
bool use_fused(const at::Tensor& x);

// While alive, forwards on this thread take the composite formulas (tests hold the fused path against them).
class CompositeOnly {
 public:
  CompositeOnly();
  ~CompositeOnly();
  CompositeOnly(const CompositeOnly&) = delete;
  CompositeOnly& operator=(const CompositeOnly&) = delete;

 private:
  bool before_;
};

}  // namespace vispec::kernels
