// The kernel set's entries and the helpers of kernels/operator.h.
#include "kernels/operator.h"

#include <algorithm>
#include <mutex>

#include "core/check.h"

namespace vispec::kernels {

namespace {

// Filled at static initialisation, read after main has begun.
std::vector<KernelEntry>& entries() {
  static std::vector<KernelEntry> all;
  return all;
}
std::mutex& entries_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

KernelRegistration::KernelRegistration(const char* name, int version, KernelCheck check, bool own_fallback) {
  const std::lock_guard<std::mutex> lock(entries_mutex());
  entries().push_back({name, version, check, own_fallback});
}

std::vector<KernelEntry> kernel_entries() {
  const std::lock_guard<std::mutex> lock(entries_mutex());
  auto all = entries();
  std::sort(all.begin(), all.end(),
            [](const KernelEntry& a, const KernelEntry& b) { return std::string(a.name) < std::string(b.name); });
  return all;
}

torch::Tensor check_pattern(std::vector<int64_t> shape, double phase, torch::ScalarType dtype) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return (torch::sin(torch::arange(n, torch::kFloat32) * 0.731 + phase) * 1.7).view(shape).to(dtype);
}

std::string check_close(const char* what, const torch::Tensor& gpu, const torch::Tensor& ref, torch::ScalarType dtype) {
  const double tolerance = dtype == torch::kFloat32 ? 1e-5 : dtype == torch::kFloat16 ? 2e-3 : 2e-2;
  const auto a = gpu.to(torch::kCPU, torch::kFloat32), b = ref.to(torch::kCPU, torch::kFloat32);
  if (torch::allclose(a, b, tolerance, tolerance)) return "";
  return std::string(what) + " differs by " + std::to_string((a - b).abs().max().item<float>());
}

bool same_result(const torch::Tensor& a, const torch::Tensor& b) { return torch::equal(a.cpu(), b.cpu()); }

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

Dtype dtype_code(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return Dtype::f32;
    case torch::kBFloat16: return Dtype::bf16;
    case torch::kFloat16: return Dtype::f16;
    default: VISPEC_FAIL("the fused CUDA kernels take float32, bfloat16 or float16, not ", t.scalar_type());
  }
}

void check_launch(int error, const char* op) {
  VISPEC_CHECK(error == 0, "CUDA kernel vispec::", op, " failed to launch: ", cudaGetErrorString(cudaError_t(error)));
}

}  // namespace cuda
#endif

}  // namespace vispec::kernels
