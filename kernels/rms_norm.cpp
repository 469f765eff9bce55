// vispec::rms_norm and vispec::add_rms_norm: their schemas, CPU reference, CUDA binding and kernel check
// (kernels/README.md), and the C++ calls that choose between them and the composite formula.
#include "kernels/rms_norm.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/kernel_check.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

// One row: h = x (+ delta, rounded to T), out = T(T(h / rms(h)) * weight). The sum of squares in double: the
// reference is the exact one, the kernel's float sums are held to it within tolerance.
template <typename T>
void rms_row(const T* x, const T* delta, const T* weight, T* sum_out, T* out, int64_t D, float eps,
             std::vector<float>& h) {
  double squares = 0;
  for (int64_t i = 0; i < D; ++i) {
    float v = float(x[i]);
    if (delta) v = float(T(v + float(delta[i])));
    h[i] = v;
    squares += double(v) * double(v);
  }
  const float inverse = 1.0f / std::sqrt(float(squares / double(D)) + eps);
  for (int64_t i = 0; i < D; ++i) {
    if (sum_out) sum_out[i] = T(h[i]);
    out[i] = T(float(T(h[i] * inverse)) * float(weight[i]));
  }
}

template <typename T>
void rms_rows(const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight,
              const torch::Tensor& sum_out, const torch::Tensor& out, float eps) {
  const int64_t D = x.size(-1), rows = x.numel() / std::max<int64_t>(1, D);
  const T* xp = x.data_ptr<T>();
  const T* dp = delta.defined() ? delta.data_ptr<T>() : nullptr;
  const T* wp = weight.data_ptr<T>();
  T* sp = sum_out.defined() ? sum_out.data_ptr<T>() : nullptr;
  T* op = out.data_ptr<T>();
  // Rows per task: a decode step's few rows stay on one thread, a prefill's hundreds spread.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, D));
  at::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> h(static_cast<size_t>(D));
    for (int64_t r = r0; r < r1; ++r)
      rms_row<T>(xp + r * D, dp ? dp + r * D : nullptr, wp, sp ? sp + r * D : nullptr, op + r * D, D, eps, h);
  });
}

// The checks every implementation makes before it touches memory.
void check_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor* delta) {
  VISPEC_ASSERT(x.dim() >= 1 && weight.dim() == 1 && weight.size(0) == x.size(-1), "rms_norm of ", x.sizes(),
                " by a weight of ", weight.sizes());
  VISPEC_ASSERT(weight.scalar_type() == x.scalar_type(), "rms_norm: weight ", weight.scalar_type(), ", x ",
                x.scalar_type());
  VISPEC_ASSERT(!delta || (delta->sizes() == x.sizes() && delta->scalar_type() == x.scalar_type()), "add_rms_norm: x ",
                x.sizes(), ", delta ", delta->sizes());
}

torch::Tensor rms_norm_cpu(const torch::Tensor& x_in, const torch::Tensor& weight_in, double eps) {
  check_norm(x_in, weight_in, nullptr);
  const auto x = x_in.contiguous(), weight = weight_in.contiguous();
  auto out = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "vispec::rms_norm",
                                  [&] { rms_rows<scalar_t>(x, {}, weight, {}, out, float(eps)); });
  return out;
}

std::tuple<torch::Tensor, torch::Tensor> add_rms_norm_cpu(const torch::Tensor& x_in, const torch::Tensor& delta_in,
                                                          const torch::Tensor& weight_in, double eps) {
  check_norm(x_in, weight_in, &delta_in);
  const auto x = x_in.contiguous(), delta = delta_in.contiguous(), weight = weight_in.contiguous();
  auto sum = torch::empty_like(x), out = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "vispec::add_rms_norm",
                                  [&] { rms_rows<scalar_t>(x, delta, weight, sum, out, float(eps)); });
  return {sum, out};
}

torch::Tensor rms_norm_op(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  static const auto op =
      operator_handle<torch::Tensor(const torch::Tensor&, const torch::Tensor&, double)>("vispec::rms_norm");
  return op.call(x, weight, eps);
}

std::tuple<torch::Tensor, torch::Tensor> add_rms_norm_op(const torch::Tensor& x, const torch::Tensor& delta,
                                                         const torch::Tensor& weight, double eps) {
  using Tensor = const torch::Tensor&;
  static const auto op =
      operator_handle<std::tuple<torch::Tensor, torch::Tensor>(Tensor, Tensor, Tensor, double)>("vispec::add_rms_norm");
  return op.call(x, delta, weight, eps);
}

// The formula of LlamaGen's RMSNorm, which training differentiates.
torch::Tensor rms_norm_composite(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  auto xf = x.to(torch::kFloat32);
  auto y = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return y.to(x.scalar_type()) * weight;
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/rms_norm.cu: rows x D; sum_out = x + delta where delta is given (else both nullptr), out = rms_norm.
int rms_norm(Dtype dtype, const void* x, const void* delta, const void* weight, void* sum_out, void* out, int64_t rows,
             int64_t D, float eps, CUstream_st* stream);

namespace {

torch::Tensor rms_norm_cuda(const torch::Tensor& x_in, const torch::Tensor& weight, double eps) {
  check_norm(x_in, weight, nullptr);
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto x = x_in.contiguous(), w = weight.contiguous();
  auto out = torch::empty_like(x);
  const int64_t D = x.size(-1);
  check_launch(rms_norm(dtype_code(x), x.data_ptr(), nullptr, w.data_ptr(), nullptr, out.data_ptr(),
                        x.numel() / std::max<int64_t>(1, D), D, float(eps), stream_of(x)),
               "rms_norm");
  return out;
}

std::tuple<torch::Tensor, torch::Tensor> add_rms_norm_cuda(const torch::Tensor& x_in, const torch::Tensor& delta_in,
                                                           const torch::Tensor& weight, double eps) {
  check_norm(x_in, weight, &delta_in);
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto x = x_in.contiguous(), delta = delta_in.contiguous(), w = weight.contiguous();
  auto sum = torch::empty_like(x), out = torch::empty_like(x);
  const int64_t D = x.size(-1);
  check_launch(rms_norm(dtype_code(x), x.data_ptr(), delta.data_ptr(), w.data_ptr(), sum.data_ptr(), out.data_ptr(),
                        x.numel() / std::max<int64_t>(1, D), D, float(eps), stream_of(x)),
               "add_rms_norm");
  return {sum, out};
}

// Both operators over rows of 96 (a block per row) and of 512 and 1280 (whole 16-byte vectors per lane: a warp
// per row, GPT-XL's width among them).
std::string kernel_check_rms_norm(const c10::Device& device, c10::ScalarType dtype) {
  for (const int64_t width : {int64_t(96), int64_t(512), int64_t(1280)}) {
    const auto x = check_pattern({3, 2, width}, 0.3, dtype), delta = check_pattern({3, 2, width}, 1.1, dtype);
    const auto w = check_pattern({width}, 2.6, dtype);
    auto problem =
        check_close("rms_norm", rms_norm_op(x.to(device), w.to(device), 1e-5), rms_norm_op(x, w, 1e-5), dtype);
    const auto [sum, normed] = add_rms_norm_op(x.to(device), delta.to(device), w.to(device), 1e-6);
    const auto [sum_ref, normed_ref] = add_rms_norm_op(x, delta, w, 1e-6);
    if (problem.empty()) problem = check_close("add_rms_norm's sum", sum, sum_ref, dtype);
    if (problem.empty()) problem = check_close("add_rms_norm", normed, normed_ref, dtype);
    if (!problem.empty()) return problem + " (width " + std::to_string(width) + ")";
  }
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) {
  m.impl("rms_norm", &cuda::rms_norm_cuda);
  m.impl("add_rms_norm", &cuda::add_rms_norm_cuda);
}
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor");
  m.def("add_rms_norm(Tensor x, Tensor delta, Tensor weight, float eps) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) {
  m.impl("rms_norm", &rms_norm_cpu);
  m.impl("add_rms_norm", &add_rms_norm_cpu);
}

VISPEC_KERNEL(rms_norm, 1, &cuda::kernel_check_rms_norm);  // checks add_rms_norm too
VISPEC_KERNEL(add_rms_norm, 1, nullptr);

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return use_fused(x, weight) ? rms_norm_op(x, weight, eps) : rms_norm_composite(x, weight, eps);
}

std::tuple<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                                                double eps) {
  if (use_fused(x, weight)) return add_rms_norm_op(x, delta, weight, eps);
  const auto sum = x + delta;
  return {sum, rms_norm_composite(sum, weight, eps)};
}

}  // namespace vispec::kernels
