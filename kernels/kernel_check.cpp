// The kernel set of a device and dtype: every operator's CUDA check (kernels/operator.h's entries, each declared
// beside its operator) run once before the first fused forward, and the set's name derived from the entries.
#include "kernels/kernel_check.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "core/scoped_flag.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

constexpr const char* kComposite = "composite";

thread_local bool composite_only = false;

// What the checks found on one device and dtype: the first failure that turns the whole set to the composite
// formulas ("" if none), and the own_fallback entries whose kernels failed (each runs its reference instead).
struct Verdict {
  std::string problem;
  std::set<std::string> falling_back;
};

// "fused-" and 8 hex digits of a 32-bit FNV-1a over every entry's "name@version;", sorted by name, an entry that
// falls back counting as version 0: a kernel added, removed, with its arithmetic changed or not in use names
// another set.
std::string fused_set_name(const std::set<std::string>& falling_back) {
  uint32_t hash = 2166136261u;
  for (const auto& e : kernel_entries()) {
    const int version = falling_back.count(e.name) ? 0 : e.version;
    for (const char c : std::string(e.name) + "@" + std::to_string(version) + ";") {
      hash ^= uint8_t(c);
      hash *= 16777619u;
    }
  }
  char name[16];
  std::snprintf(name, sizeof name, "fused-%08x", hash);
  return name;
}

thread_local bool checking = false;  // this thread runs the checks: kernel_agrees says yes

// Every operator's CUDA check on `device` in `dtype`.
Verdict check_cuda(const c10::Device& device, torch::ScalarType dtype) {
  Verdict v;
#ifndef VISPEC_CUDA_KERNELS
  (void)device, (void)dtype;
  v.problem = "this build has no CUDA kernels (nvcc did not compile kernels/*.cu)";
#else
  torch::NoGradGuard no_grad;
  const ScopedFlag running(checking);
  for (const auto& e : kernel_entries()) {
    if (!e.check) continue;
    std::string problem;
    try {
      problem = e.check(device, dtype);
    } catch (const std::exception& error) {
      const std::string what = error.what();
      problem = std::string(e.name) + ": " + what.substr(0, what.find('\n'));
    }
    if (problem.empty()) continue;
    if (!e.own_fallback) {
      v.problem = problem;
      break;
    }
    spdlog::warn("the CUDA kernel vispec::{} is not used on {} ({}): {}; its reference runs instead", e.name,
                 device.str(), c10::toString(dtype), problem);
    v.falling_back.insert(e.name);
  }
#endif
  return v;
}

std::mutex verdicts_mutex;
std::map<std::pair<int, int>, Verdict> verdicts;  // (device index, dtype) -> what its checks found

// The checks' verdict on a CUDA device and dtype, run at the first ask.
const Verdict& verdict_of(const c10::Device& device, c10::ScalarType dtype) {
  const std::lock_guard<std::mutex> lock(verdicts_mutex);
  const std::pair<int, int> key{device.index(), int(dtype)};
  auto found = verdicts.find(key);
  if (found == verdicts.end()) {
    auto v = check_cuda(device, dtype);
    if (!v.problem.empty())
      spdlog::warn(
          "the fused CUDA kernels are not used on {} ({}): {}; the composite operators run instead "
          "(slower; the last bits of the outputs differ)",
          device.str(), c10::toString(dtype), v.problem);
    found = verdicts.emplace(key, std::move(v)).first;
  }
  return found->second;  // std::map's nodes stay where they are
}

}  // namespace

std::string kernel_set(const c10::Device& device, c10::ScalarType dtype) {
  static const std::string fused = fused_set_name({});
  if (device.is_cpu()) return fused;
  const bool supported = dtype == torch::kFloat32 || dtype == torch::kBFloat16 || dtype == torch::kFloat16;
  if (!device.is_cuda() || !supported) return kComposite;
  const auto& v = verdict_of(device, dtype);
  if (!v.problem.empty()) return kComposite;
  return v.falling_back.empty() ? fused : fused_set_name(v.falling_back);
}

bool kernel_agrees(const char* name, const c10::Device& device, c10::ScalarType dtype) {
  if (checking || !device.is_cuda()) return true;
  return verdict_of(device, dtype).falling_back.count(name) == 0;
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
