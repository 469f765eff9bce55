#include "bench/kernel_profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <algorithm>
#include <map>
#include <set>

namespace vispec {

namespace {
namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;

std::vector<KernelTime> sorted(const std::map<std::string, KernelTime>& by_name) {
  std::vector<KernelTime> out;
  for (const auto& [name, k] : by_name) out.push_back(k);
  std::stable_sort(out.begin(), out.end(), [](const KernelTime& a, const KernelTime& b) { return a.us > b.us; });
  return out;
}
}  // namespace

std::vector<KernelTime> profile_kernels(const std::function<void()>& work, bool cuda) {
  const std::set<ActivityType> activities =
      cuda ? std::set<ActivityType>{ActivityType::CPU, ActivityType::CUDA} : std::set<ActivityType>{ActivityType::CPU};
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  try {
    work();
    if (cuda) torch::cuda::synchronize();  // every kernel has ended before the records are collected
  } catch (...) {
    profiler::disableProfiler();
    throw;
  }
  const auto result = profiler::disableProfiler();
  const auto wanted = cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  std::map<std::string, KernelTime> by_name;
  for (const auto& e : result->events()) {
    if (e.deviceType() != wanted) continue;
    auto& k = by_name[e.name()];
    k.name = e.name();
    k.calls += 1;
    k.us += double(e.durationNs()) / 1e3;
  }
  return sorted(by_name);
}

std::vector<KernelTime> per_step(const std::vector<KernelTime>& longer, const std::vector<KernelTime>& shorter,
                                 int64_t steps) {
  std::map<std::string, KernelTime> by_name;
  for (const auto& k : longer) by_name[k.name] = k;
  for (const auto& k : shorter) {
    auto& d = by_name[k.name];
    d.name = k.name;
    d.calls -= k.calls;
    d.us -= k.us;
  }
  std::map<std::string, KernelTime> grown;
  for (auto& [name, k] : by_name) {
    if (k.calls <= 0) continue;  // the prefill's and the warm-up's kernels
    k.calls /= double(steps);
    k.us = std::max(0.0, k.us / double(steps));
    grown[name] = k;
  }
  return sorted(grown);
}

std::string kernel_class(const std::string& name) {
  const auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("fmha") || has("flash") || has("ttention") || has("sdpa") || has("attend_kernel")) return "attention";
  if (has("gemm") || has("gemv") || has("Gemm") || has("xmma") || has("nvjet") || has("cublas") || has("cutlass") ||
      has("splitK") || has("linear_rows"))
    return "matmul";
  if (has("vispec")) return "vispec";
  if (has("Memcpy") || has("Memset") || has("memcpy") || has("memset")) return "copy";
  return "aten";
}

}  // namespace vispec
