// What each operator's .cpp declares itself with (kernels/README.md has the checklist): the typed handle its C++
// call goes through, its entry in the kernel set (VISPEC_KERNEL: name, arithmetic version, CUDA check), the test
// inputs those checks run on, and, in a build with CUDA kernels, what a CUDA binding needs (the dtype code, the
// current stream, the launch check). Included by kernels/*.cpp only.
#pragma once

#include <torch/torch.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#ifdef VISPEC_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda_dtype.h"
#endif

namespace vispec::kernels {

// The operator `name` ("vispec::rms_norm") typed by its C++ signature; found once per call site (keep it in a
// static). A call through it is one operator to the dispatcher, the profiler and core/op_counter.h.
template <class Signature>
c10::TypedOperatorHandle<Signature> operator_handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

// A CUDA kernel's check: runs the operator on small inputs on `device` (activations in `dtype` where it takes
// them) beside its CPU reference; "" when they agree, else what differs. It calls the operators through their
// handles, never through a C++ call that chooses between fused and composite (that choice asks for this check).
using KernelCheck = std::string (*)(const c10::Device& device, c10::ScalarType dtype);

// An operator's entry in the kernel set: its name, the version of its arithmetic (bump it whenever the bits it
// computes change: the job identity's kernel set is derived from every entry, kernels/kernel_check.h) and its
// CUDA check (none in a build without CUDA kernels).
// own_fallback: the operator's reference is ATen operators that run on any device (the chain it replaces), so
// where its kernel fails the check only this operator runs its reference on the GPU (its CUDA binding asks
// kernel_agrees); any other failure turns the whole set to the composite formulas.
struct KernelEntry {
  const char* name;
  int version;
  KernelCheck check;
  bool own_fallback;
};

// Adds an entry at static initialisation (VISPEC_KERNEL below).
struct KernelRegistration {
  KernelRegistration(const char* name, int version, KernelCheck check, bool own_fallback = false);
};

// Every entry, sorted by name.
std::vector<KernelEntry> kernel_entries();

#ifdef VISPEC_CUDA_KERNELS
#define VISPEC_KERNEL(name, version, check) \
  static const ::vispec::kernels::KernelRegistration vispec_kernel_##name { #name, version, check }
#define VISPEC_KERNEL_FALLING_BACK(name, version, check) \
  static const ::vispec::kernels::KernelRegistration vispec_kernel_##name { #name, version, check, true }
#else
#define VISPEC_KERNEL(name, version, check) \
  static const ::vispec::kernels::KernelRegistration vispec_kernel_##name { #name, version, nullptr }
#define VISPEC_KERNEL_FALLING_BACK(name, version, check) \
  static const ::vispec::kernels::KernelRegistration vispec_kernel_##name { #name, version, nullptr, true }
#endif

// Whether the kernel of entry `name` passed its check on this device and dtype (for an own_fallback entry's CUDA
// binding: false, run the reference). True while the checks themselves run, so that a check runs the kernel.
bool kernel_agrees(const char* name, const c10::Device& device, c10::ScalarType dtype);

// The checks' test inputs: a sine pattern of the given shape in dtype (no random generator is touched).
torch::Tensor check_pattern(std::vector<int64_t> shape, double phase, torch::ScalarType dtype);

// "" where the GPU's result `gpu` and the CPU reference `ref` differ by at most a rounding of dtype, else what
// differs and by how much.
std::string check_close(const char* what, const torch::Tensor& gpu, const torch::Tensor& ref, torch::ScalarType dtype);

// Whether two results of an operator (tensors, or tuples of them) are equal element for element, wherever they lie.
bool same_result(const torch::Tensor& a, const torch::Tensor& b);
template <class... T>
bool same_result(const std::tuple<T...>& a, const std::tuple<T...>& b) {
  return std::apply(
      [&](const auto&... x) { return std::apply([&](const auto&... y) { return (same_result(x, y) && ...); }, b); }, a);
}

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// The launchers' code for t's dtype (float32, bfloat16 or float16; any other fails in one line naming it).
Dtype dtype_code(const torch::Tensor& t);
// The current CUDA stream of t's device: a launch on it is recorded by a CUDA graph being captured.
inline CUstream_st* stream_of(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}
// Whether t's data starts on a 16-byte boundary (the kernels' 16-byte loads).
inline bool aligned16(const torch::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }
// Fails in one line naming the operator where a launcher returned an error.
void check_launch(int error, const char* op);

}  // namespace cuda
#endif

}  // namespace vispec::kernels
