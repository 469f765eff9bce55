// vispec::sample_next: its schema, CPU reference, CUDA binding and kernel check (kernels/README.md), and its C++
// call.
#include "kernels/sample_next.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/check.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

// The checks every implementation makes before it touches memory (one message per mistake).
void check_sample_next(const torch::Tensor& logits, const torch::Tensor& u, const torch::Tensor& nonfinite) {
  VISPEC_ASSERT(logits.dim() == 2 && logits.scalar_type() == torch::kFloat32 && logits.size(1) > 0,
                "sample_next: logits ", logits.sizes(), " ", logits.scalar_type());
  VISPEC_ASSERT(u.dim() == 1 && u.size(0) == logits.size(0) && u.scalar_type() == torch::kFloat64,
                "sample_next: uniforms ", u.sizes(), " ", u.scalar_type(), " for ", logits.size(0), " rows");
  VISPEC_ASSERT(nonfinite.dim() == 0 && nonfinite.scalar_type() == torch::kBool, "sample_next: flag ",
                nonfinite.sizes(), " ", nonfinite.scalar_type());
}

// One row of sample_next. The composite chain's rules (decoding/common/sampler.cpp): top-k keeps the values at or
// above the k-th largest; top-p walks the ascending sort and drops every token whose cumulative mass from the
// bottom is at most 1 - p, the most likely always kept; the draw is the first index whose float64 CDF exceeds
// u times the total.
int64_t sample_row(const float* logits, int64_t V, double u, double temperature, int64_t top_k, double top_p,
                   bool& nonfinite) {
  nonfinite = false;
  for (int64_t i = 0; i < V; ++i) nonfinite = nonfinite || !std::isfinite(logits[i]);
  if (temperature <= 0) {  // the argmax; a NaN counts as the largest, as LibTorch's argmax has it
    int64_t best = 0;
    for (int64_t i = 1; i < V; ++i) {
      if (std::isnan(logits[best])) break;
      if (std::isnan(logits[i]) || logits[i] > logits[best]) best = i;
    }
    return best;
  }
  constexpr float kDropped = -std::numeric_limits<float>::infinity();
  const float t = float(std::max(temperature, 1e-5));
  std::vector<float> v(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; ++i) v[i] = logits[i] / t;
  if (top_k > 0 && top_k < V) {
    std::vector<float> order(v);
    std::nth_element(order.begin(), order.begin() + (top_k - 1), order.end(), std::greater<float>());
    const float kth = order[top_k - 1];
    for (auto& x : v)
      if (x < kth) x = kDropped;
  }
  if (top_p < 1.0) {
    std::vector<int64_t> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return v[a] < v[b]; });
    const float top = v[order.back()];
    float mass = 0;
    for (int64_t i = 0; i < V; ++i) mass += std::exp(v[order[i]] - top);
    const float bottom = float(1.0 - top_p);
    float cumulative = 0;
    std::vector<int64_t> dropped;
    for (int64_t i = 0; i + 1 < V; ++i) {
      cumulative += std::exp(v[order[i]] - top) / mass;
      if (cumulative > bottom) break;
      dropped.push_back(order[i]);
    }
    for (auto i : dropped) v[i] = kDropped;
  }
  const float top = *std::max_element(v.begin(), v.end());
  float mass = 0;
  for (auto& x : v) mass += (x = std::exp(x - top));
  double total = 0;
  for (auto& x : v) total += double(x /= mass);
  const double target = u * total;
  double cdf = 0;
  for (int64_t i = 0; i < V; ++i)
    if ((cdf += double(v[i])) > target) return i;
  return V - 1;
}

torch::Tensor sample_next_cpu(const torch::Tensor& logits_in, const torch::Tensor& u_in, double temperature,
                              int64_t top_k, double top_p, const torch::Tensor& nonfinite) {
  check_sample_next(logits_in, u_in, nonfinite);
  const auto logits = logits_in.contiguous(), u = u_in.contiguous();
  const int64_t B = logits.size(0), V = logits.size(1);
  auto tokens = torch::empty({B}, torch::kInt64);
  std::vector<char> bad(static_cast<size_t>(B), 0);
  const float* lp = logits.data_ptr<float>();
  const double* up = u.data_ptr<double>();
  int64_t* tp = tokens.data_ptr<int64_t>();
  at::parallel_for(0, B, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, V)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      bool row_bad = false;
      tp[r] = sample_row(lp + r * V, V, up[r], temperature, top_k, top_p, row_bad);
      bad[r] = row_bad;
    }
  });
  if (std::any_of(bad.begin(), bad.end(), [](char b) { return b != 0; })) nonfinite.fill_(true);
  return tokens;
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/sample_next.cu: logits [B, V] float, u [B] double -> tokens [B]; *nonfinite (a device bool) set where a
// logit is not finite.
int sample_next(const float* logits, const double* u, int64_t* tokens, bool* nonfinite, int64_t B, int64_t V,
                double temperature, int64_t top_k, double top_p, CUstream_st* stream);

namespace {

torch::Tensor sample_next_cuda(const torch::Tensor& logits_in, const torch::Tensor& u_in, double temperature,
                               int64_t top_k, double top_p, const torch::Tensor& nonfinite) {
  check_sample_next(logits_in, u_in, nonfinite);
  VISPEC_ASSERT(nonfinite.device() == logits_in.device() && u_in.device() == logits_in.device(),
                "sample_next: logits, uniforms and flag on one device");
  const c10::cuda::CUDAGuard guard(logits_in.device());
  const auto logits = logits_in.contiguous(), u = u_in.contiguous();
  auto tokens = torch::empty({logits.size(0)}, logits.options().dtype(torch::kInt64));
  check_launch(sample_next(logits.data_ptr<float>(), u.data_ptr<double>(), tokens.data_ptr<int64_t>(),
                           nonfinite.data_ptr<bool>(), logits.size(0), logits.size(1), temperature, top_k, top_p,
                           stream_of(logits)),
               "sample_next");
  return tokens;
}

// Greedy, plain, top-k, top-p and both: the same tokens (the uniforms sit far from any CDF boundary's rounding).
std::string kernel_check_sample_next(const c10::Device& device, c10::ScalarType) {
  const auto logits = check_pattern({4, 300}, 0.3, torch::kFloat32) * 3;
  const auto u = torch::tensor({0.05, 0.37, 0.61, 0.93}, torch::kFloat64);
  struct Chain {
    double temperature;
    int64_t top_k;
    double top_p;
  };
  for (const auto& c :
       {Chain{0.0, 0, 1.0}, Chain{1.0, 0, 1.0}, Chain{0.7, 40, 1.0}, Chain{1.0, 0, 0.8}, Chain{1.3, 100, 0.9}}) {
    const auto flag = torch::zeros({}, torch::kBool);
    const auto gpu =
        kernels::sample_next(logits.to(device), u.to(device), c.temperature, c.top_k, c.top_p, flag.to(device));
    if (!same_result(gpu, kernels::sample_next(logits, u, c.temperature, c.top_k, c.top_p, flag)))
      return "sample_next (temperature " + std::to_string(c.temperature) + ", top_k " + std::to_string(c.top_k) +
             ", top_p " + std::to_string(c.top_p) + ") drew other tokens";
  }
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("sample_next", &cuda::sample_next_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def(
      "sample_next(Tensor logits, Tensor u, float temperature, int top_k, float top_p, Tensor(a!) nonfinite) -> "
      "Tensor");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("sample_next", &sample_next_cpu); }

VISPEC_KERNEL(sample_next, 1, &cuda::kernel_check_sample_next);

at::Tensor sample_next(const at::Tensor& logits, const at::Tensor& u, double temperature, int64_t top_k, double top_p,
                       const at::Tensor& nonfinite) {
  using Tensor = const at::Tensor&;
  static const auto op =
      operator_handle<at::Tensor(Tensor, Tensor, double, int64_t, double, Tensor)>("vispec::sample_next");
  return op.call(logits, u, temperature, top_k, top_p, nonfinite);
}

}  // namespace vispec::kernels
