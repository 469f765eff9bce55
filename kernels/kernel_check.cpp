// The kernel set of a device and dtype: every operator's CUDA check (kernels/operator.h's entries, each declared
// beside its operator) run once before the first fused forward, and the set's name derived from the entries.
#include "kernels/kernel_check.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <utility>

#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

constexpr const char* kComposite = "composite";

thread_local bool composite_only = false;

// "fused-" and 8 hex digits of a 32-bit FNV-1a over every entry's "name@version;", sorted by name: a kernel
// added, removed or with its arithmetic changed names another set.
std::string fused_set_name() {
  uint32_t hash = 2166136261u;
  for (const auto& e : kernel_entries())
    for (const char c : std::string(e.name) + "@" + std::to_string(e.version) + ";") {
      hash ^= uint8_t(c);
      hash *= 16777619u;
    }
  char name[16];
  std::snprintf(name, sizeof name, "fused-%08x", hash);
  return name;
}

// Every operator's CUDA check on `device` in `dtype`: "" when all agree with their CPU references, else the first
// that does not, and what went wrong.
std::string check_cuda(const c10::Device& device, torch::ScalarType dtype) {
#ifndef VISPEC_CUDA_KERNELS
  (void)device, (void)dtype;
  return "this build has no CUDA kernels (nvcc did not compile kernels/*.cu)";
#else
  torch::NoGradGuard no_grad;
  for (const auto& e : kernel_entries()) {
    if (!e.check) continue;
    try {
      const auto problem = e.check(device, dtype);
      if (!problem.empty()) return problem;
    } catch (const std::exception& error) {
      const std::string what = error.what();
      return std::string(e.name) + ": " + what.substr(0, what.find('\n'));
    }
  }
  return "";
#endif
}

}  // namespace

std::string kernel_set(const c10::Device& device, c10::ScalarType dtype) {
  static const std::string fused = fused_set_name();
  if (device.is_cpu()) return fused;
  const bool supported = dtype == torch::kFloat32 || dtype == torch::kBFloat16 || dtype == torch::kFloat16;
  if (!device.is_cuda() || !supported) return kComposite;
  static std::mutex mutex;
  static std::map<std::pair<int, int>, bool> agreed;  // (device index, dtype) -> the kernels passed
  const std::lock_guard<std::mutex> lock(mutex);
  const std::pair<int, int> key{device.index(), int(dtype)};
  auto found = agreed.find(key);
  if (found == agreed.end()) {
    const auto problem = check_cuda(device, dtype);
    if (!problem.empty())
      spdlog::warn(
          "the fused CUDA kernels are not used on {} ({}): {}; the composite operators run instead "
          "(slower; the last bits of the outputs differ)",
          device.str(), c10::toString(dtype), problem);
    found = agreed.emplace(key, problem.empty()).first;
  }
  return found->second ? fused : kComposite;
}

bool use_fused(const c10::Device& device, c10::ScalarType dtype) {
  if (composite_only || torch::GradMode::is_enabled()) return false;
  return device.is_cpu() || kernel_set(device, dtype) != kComposite;
}

bool use_fused(const at::Tensor& x) { return use_fused(x.device(), x.scalar_type()); }

bool use_fused(const at::Tensor& x, const at::Tensor& operand) {
  return operand.scalar_type() == x.scalar_type() && use_fused(x);
}

CompositeOnly::CompositeOnly() : set_(composite_only) {}

}  // namespace vispec::kernels
