// vispec::draft_top_k: its schema, CPU reference, CUDA binding and kernel check (kernels/README.md), and its C++
// call.
#include "kernels/draft_top_k.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

void check_draft_top_k(const torch::Tensor& logits, bool guided, int64_t K, const torch::Tensor& nonfinite) {
  VISPEC_ASSERT(logits.dim() >= 2 && logits.scalar_type() == torch::kFloat32 && (!guided || logits.size(0) % 2 == 0),
                "draft_top_k: logits ", logits.sizes(), " ", logits.scalar_type(), " are not float32 [R, ..., V]",
                guided ? " with [cond; uncond] rows" : "");
  VISPEC_ASSERT(K >= 1 && K <= logits.size(-1), "draft_top_k: ", K, " of ", logits.size(-1), " values");
  VISPEC_ASSERT(
      nonfinite.dim() == 0 && nonfinite.scalar_type() == torch::kBool && nonfinite.device() == logits.device(),
      "draft_top_k: the flag is ", nonfinite.sizes(), " ", nonfinite.scalar_type(), " on ", nonfinite.device(),
      ", not a 0-dim bool on ", logits.device());
}

// The ATen chain the operator replaces, inside it (on any device: the CUDA binding's fallback too, where the
// kernel failed its check): the composite formulas' bits (decoding/common/sampler.h's
// cfg_combine and target_probs, then log and topk), so a CPU run draws the trees it drew as a chain.
std::tuple<torch::Tensor, torch::Tensor> draft_top_k_cpu(const torch::Tensor& logits, bool guided, double cfg_scale,
                                                         double temperature, int64_t K,
                                                         const torch::Tensor& nonfinite) {
  check_draft_top_k(logits, guided, K, nonfinite);
  static const auto mix = operator_handle<torch::Tensor(const torch::Tensor&, double)>("vispec::cfg_mix");
  static const auto note = operator_handle<void(const torch::Tensor&, const torch::Tensor&)>("vispec::note_nonfinite");
  const auto mixed = guided ? mix.call(logits, cfg_scale) : logits;
  note.call(mixed, nonfinite);
  torch::Tensor log_probs;
  if (temperature <= 0) {
    log_probs = torch::log_softmax(mixed, -1);
  } else {
    const auto scaled = temperature != 1.0 ? mixed / std::max(temperature, 1e-5) : mixed;
    log_probs = torch::softmax(scaled, -1).log();
  }
  return log_probs.topk(K, -1);
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/draft_top_k.cu: logits rows (cond at row r, uncond at row rows + r when guided) of V floats -> values and
// indices [rows, K]; *nonfinite (a device bool) set where a mixed logit is not finite. temperature: 0 for the
// log-softmax, else the divisor (1: none).
int draft_top_k(const float* logits, float* values, int64_t* indices, bool* nonfinite, int64_t rows, int64_t V,
                int64_t K, bool guided, float scale, float temperature, CUstream_st* stream);

namespace {

std::tuple<torch::Tensor, torch::Tensor> draft_top_k_cuda(const torch::Tensor& logits_in, bool guided, double cfg_scale,
                                                          double temperature, int64_t K,
                                                          const torch::Tensor& nonfinite) {
  if (!kernel_agrees("draft_top_k", logits_in.device(), torch::kFloat32))  // its check failed: the chain
    return draft_top_k_cpu(logits_in, guided, cfg_scale, temperature, K, nonfinite);
  check_draft_top_k(logits_in, guided, K, nonfinite);
  const c10::cuda::CUDAGuard guard(logits_in.device());
  const auto logits = logits_in.contiguous();
  auto sizes = logits.sizes().vec();
  if (guided) sizes[0] /= 2;
  const int64_t V = sizes.back();
  sizes.back() = K;
  auto values = torch::empty(sizes, logits.options());
  auto indices = torch::empty(sizes, logits.options().dtype(torch::kInt64));
  const float t = temperature <= 0 ? 0.f : float(std::max(temperature, 1e-5));
  check_launch(
      draft_top_k(logits.data_ptr<float>(), values.data_ptr<float>(), indices.data_ptr<int64_t>(),
                  nonfinite.data_ptr<bool>(), values.numel() / K, V, K, guided, float(cfg_scale), t, stream_of(logits)),
      "draft_top_k");
  return {values, indices};
}

// Guided and not, at temperatures 1, 0.7 and 0: the same largest log-probs within float32's rounding (the kernel
// sums the softmax in another order), and at the kernel's indices the reference's log-probs are those values (so
// two values within a rounding of each other may come in either order). A NaN sets the flag.
std::string kernel_check_draft_top_k(const c10::Device& device, c10::ScalarType) {
  const auto logits = check_pattern({6, 2, 300}, 0.3, torch::kFloat32) * 3;
  for (const bool guided : {true, false})
    for (const double temperature : {1.0, 0.7, 0.0}) {
      const auto flag = torch::zeros({}, torch::kBool);
      const auto [values, indices] =
          kernels::draft_top_k(logits.to(device), guided, 2.5, temperature, 7, flag.to(device));
      const auto [ref_values, ref_indices] = kernels::draft_top_k(logits, guided, 2.5, temperature, 7, flag);
      auto problem = check_close("draft_top_k's values", values, ref_values, torch::kFloat32);
      if (problem.empty()) {
        const auto [all_values, all_indices] = kernels::draft_top_k(logits, guided, 2.5, temperature, 300, flag);
        const auto by_index = torch::empty_like(all_values).scatter_(-1, all_indices, all_values);
        problem = check_close("draft_top_k's indices' log-probs", by_index.gather(-1, indices.cpu()), ref_values,
                              torch::kFloat32);
      }
      if (!problem.empty()) return problem + (guided ? " (guided, T " : " (T ") + std::to_string(temperature) + ")";
    }
  auto bad = logits.clone();
  bad[1][1][17] = std::numeric_limits<float>::quiet_NaN();
  const auto flag = torch::zeros({}, torch::kBool).to(device);
  kernels::draft_top_k(bad.to(device), true, 2.5, 1.0, 7, flag);
  return flag.cpu().item<bool>() ? "" : "draft_top_k missed a NaN";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("draft_top_k", &cuda::draft_top_k_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def(
      "draft_top_k(Tensor logits, bool guided, float cfg_scale, float temperature, int K, Tensor(a!) nonfinite) -> "
      "(Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("draft_top_k", &draft_top_k_cpu); }

VISPEC_KERNEL_FALLING_BACK(draft_top_k, 1, &cuda::kernel_check_draft_top_k);

std::tuple<at::Tensor, at::Tensor> draft_top_k(const at::Tensor& logits, bool guided, double cfg_scale,
                                               double temperature, int64_t K, const at::Tensor& nonfinite) {
  using Tensor = const at::Tensor&;
  static const auto op =
      operator_handle<std::tuple<at::Tensor, at::Tensor>(Tensor, bool, double, double, int64_t, Tensor)>(
          "vispec::draft_top_k");
  return op.call(logits, guided, cfg_scale, temperature, K, nonfinite);
}

}  // namespace vispec::kernels
