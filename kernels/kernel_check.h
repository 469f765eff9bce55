// When the fused operators (kernels/README.md) run, and the check that protects a GPU user from a kernel
// nobody has run on their card: before a device and dtype's first fused forward, each CUDA kernel runs on
// test inputs beside its CPU reference; if any disagrees (or fails to launch), one warning line says so and
// that device and dtype keep the composite ATen formulas, which are slower but right. An operator whose reference
// runs on any device (kernels/operator.h's own_fallback) is turned off alone, with a line of its own.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

#include "core/scoped_flag.h"

namespace at {
class Tensor;
}

namespace vispec::kernels {

// The kernels a run with this device and dtype computes with, which decide its outputs' last bits, so the
// job's identity records it: "fused-" and a digest of every operator's name and arithmetic version
// (kernels/operator.h's entries: a kernel added or changed names another set), the same on every device that
// passed, or "composite" (a CUDA device whose kernels were not built or failed their check). On a GPU the first
// call runs every operator's check.
std::string kernel_set(const c10::Device& device, c10::ScalarType dtype);

// Whether work on this device in this dtype takes the fused operators: no gradient is being recorded (they
// have none), no CompositeOnly is alive on this thread, and the device and dtype use the "fused" kernel set.
bool use_fused(const c10::Device& device, c10::ScalarType dtype);
// use_fused for a forward over x.
bool use_fused(const at::Tensor& x);
// use_fused for a forward over x with an operand (a weight, a cache) that must then have x's dtype: each fused
// operator takes one dtype, so a layer whose operand is in another (a cache kept in float32 under bfloat16
// activations, say) takes the composite formulas.
bool use_fused(const at::Tensor& x, const at::Tensor& operand);

// While alive, forwards on this thread take the composite formulas (tests hold the fused path against them).
class CompositeOnly {
 public:
  CompositeOnly();

 private:
  ScopedFlag set_;
};

}  // namespace vispec::kernels
