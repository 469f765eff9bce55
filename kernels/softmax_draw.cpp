// vispec::softmax_draw: its schema, CPU reference, CUDA binding and kernel check (kernels/README.md), and its C++
// call.
#include "kernels/softmax_draw.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

void check_softmax_draw(const torch::Tensor& logits, const torch::Tensor& u, double temperature,
                        const torch::Tensor& nonfinite) {
  VISPEC_ASSERT(logits.dim() == 2 && logits.scalar_type() == torch::kFloat32 && logits.size(1) > 0,
                "softmax_draw: logits ", logits.sizes(), " ", logits.scalar_type(), " are not float32 [B, V]");
  VISPEC_ASSERT(u.dim() == 1 && u.size(0) == logits.size(0) && u.scalar_type() == torch::kFloat64 &&
                    u.device() == logits.device(),
                "softmax_draw: uniforms ", u.sizes(), " ", u.scalar_type(), " for ", logits.size(0), " rows");
  VISPEC_ASSERT(temperature > 0, "softmax_draw: temperature ", temperature, " (a greedy draw takes the argmax)");
  VISPEC_ASSERT(
      nonfinite.dim() == 0 && nonfinite.scalar_type() == torch::kBool && nonfinite.device() == logits.device(),
      "softmax_draw: the flag is ", nonfinite.sizes(), " ", nonfinite.scalar_type(), " on ", nonfinite.device(),
      ", not a 0-dim bool on ", logits.device());
}

// The ATen chain the operator replaces, inside it (on any device: the CUDA binding's fallback too, where the
// kernel failed its check): decoding/common/sampler.h's target_probs (without top-k and
// top-p) and sample_from_probs, with their bits, so a CPU draws the tokens it drew as a chain.
std::tuple<torch::Tensor, torch::Tensor> softmax_draw_cpu(const torch::Tensor& logits, const torch::Tensor& u,
                                                          double temperature, const torch::Tensor& nonfinite) {
  check_softmax_draw(logits, u, temperature, nonfinite);
  static const auto note = operator_handle<void(const torch::Tensor&, const torch::Tensor&)>("vispec::note_nonfinite");
  note.call(logits, nonfinite);
  const auto scaled = temperature != 1.0 ? logits / std::max(temperature, 1e-5) : logits;
  const auto probs = torch::softmax(scaled, -1);
  const auto cdf = probs.to(torch::kFloat64).cumsum(-1);
  const auto target = u.unsqueeze(-1) * cdf.narrow(-1, cdf.size(-1) - 1, 1);
  const auto tokens = torch::searchsorted(cdf, target, /*out_int32=*/false, /*right=*/true).squeeze(-1);
  return {probs, tokens.clamp_max(probs.size(-1) - 1)};
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/softmax_draw.cu: logits [B, V] float (rows contiguous), u[b * u_stride] double -> probs [B, V] float and
// tokens [B]; *nonfinite (a device bool) set where a logit is not finite. temperature: the divisor (1: none).
int softmax_draw(const float* logits, const double* u, int64_t u_stride, float* probs, int64_t* tokens, bool* nonfinite,
                 int64_t B, int64_t V, float temperature, CUstream_st* stream);

namespace {

std::tuple<torch::Tensor, torch::Tensor> softmax_draw_cuda(const torch::Tensor& logits_in, const torch::Tensor& u,
                                                           double temperature, const torch::Tensor& nonfinite) {
  if (!kernel_agrees("softmax_draw", logits_in.device(), torch::kFloat32))  // its check failed: the chain
    return softmax_draw_cpu(logits_in, u, temperature, nonfinite);
  check_softmax_draw(logits_in, u, temperature, nonfinite);
  const c10::cuda::CUDAGuard guard(logits_in.device());
  const auto logits = logits_in.contiguous();
  auto probs = torch::empty_like(logits);
  auto tokens = torch::empty({logits.size(0)}, logits.options().dtype(torch::kInt64));
  check_launch(softmax_draw(logits.data_ptr<float>(), u.data_ptr<double>(), u.stride(0), probs.data_ptr<float>(),
                            tokens.data_ptr<int64_t>(), nonfinite.data_ptr<bool>(), logits.size(0), logits.size(1),
                            float(std::max(temperature, 1e-5)), stream_of(logits)),
               "softmax_draw");
  return {probs, tokens};
}

// Temperatures 1 and 0.7, uniforms far from any CDF boundary's rounding and one read with a stride: the same
// probabilities within float32's rounding and the same tokens. A NaN sets the flag.
std::string kernel_check_softmax_draw(const c10::Device& device, c10::ScalarType) {
  const auto logits = check_pattern({4, 300}, 0.3, torch::kFloat32) * 3;
  const auto u = torch::tensor({0.05, 0.0, 0.37, 0.0, 0.61, 0.0, 0.93, 0.0}, torch::kFloat64).view({4, 2}).select(1, 0);
  for (const double temperature : {1.0, 0.7}) {
    const auto flag = torch::zeros({}, torch::kBool);
    const auto gpu = kernels::softmax_draw(logits.to(device), u.to(device), temperature, flag.to(device));
    const auto ref = kernels::softmax_draw(logits, u, temperature, flag);
    const auto problem =
        check_close("softmax_draw's probabilities", std::get<0>(gpu), std::get<0>(ref), torch::kFloat32);
    if (!problem.empty()) return problem + " (T " + std::to_string(temperature) + ")";
    if (!same_result(std::get<1>(gpu), std::get<1>(ref)))
      return "softmax_draw drew other tokens (T " + std::to_string(temperature) + ")";
  }
  auto bad = logits.clone();
  bad[2][40] = std::numeric_limits<float>::infinity();
  const auto flag = torch::zeros({}, torch::kBool).to(device);
  kernels::softmax_draw(bad.to(device), u.to(device), 1.0, flag);
  return flag.cpu().item<bool>() ? "" : "softmax_draw missed an infinity";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("softmax_draw", &cuda::softmax_draw_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def("softmax_draw(Tensor logits, Tensor u, float temperature, Tensor(a!) nonfinite) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("softmax_draw", &softmax_draw_cpu); }

VISPEC_KERNEL_FALLING_BACK(softmax_draw, 1, &cuda::kernel_check_softmax_draw);

std::tuple<at::Tensor, at::Tensor> softmax_draw(const at::Tensor& logits, const at::Tensor& u, double temperature,
                                                const at::Tensor& nonfinite) {
  using Tensor = const at::Tensor&;
  static const auto op =
      operator_handle<std::tuple<at::Tensor, at::Tensor>(Tensor, Tensor, double, Tensor)>("vispec::softmax_draw");
  return op.call(logits, u, temperature, nonfinite);
}

}  // namespace vispec::kernels
