// vispec::linear and vispec::linear_silu_mul: their schemas, implementations (at::linear on the CPU and as CUDA's
// fallback), CUDA binding and kernel check (kernels/README.md), and the C++ calls.
#include "kernels/linear.h"

#include "core/check.h"
#include "kernels/kernel_check.h"
#include "kernels/operator.h"
#include "kernels/silu_mul.h"

namespace vispec::kernels {

namespace {

torch::Tensor silu_mul_then(const torch::Tensor& gate_up) {
  static const auto op = operator_handle<torch::Tensor(const torch::Tensor&)>("vispec::silu_mul");
  return op.call(gate_up);
}

torch::Tensor linear_op(const torch::Tensor& x, const torch::Tensor& weight) {
  static const auto op = operator_handle<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>("vispec::linear");
  return op.call(x, weight);
}

torch::Tensor linear_silu_mul_then(const torch::Tensor& x, const torch::Tensor& weight) {
  static const auto op =
      operator_handle<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>("vispec::linear_silu_mul");
  return op.call(x, weight);
}

// linear on every backend but CUDA's few rows: at::linear without bias.
torch::Tensor linear_any(const torch::Tensor& x, const torch::Tensor& weight) { return at::linear(x, weight); }

torch::Tensor linear_silu_mul_cpu(const torch::Tensor& x, const torch::Tensor& weight) {
  return silu_mul_then(at::linear(x, weight));
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/linear.cu: x [M, K], w [N, K], y [M, N], contiguous and 16-byte aligned; linear_silu_mul_rows takes
// w13 [2F, K] = [w1; w3] and writes y [M, F]. linear_rows_supports: whether they take M rows of width K in
// elements of element_size bytes (at most 4 rows, K whole 16-byte vectors).
bool linear_rows_supports(int64_t M, int64_t K, int element_size);
int linear_rows(Dtype dtype, const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K,
                CUstream_st* stream);
int linear_silu_mul_rows(Dtype dtype, const void* x, const void* w13, void* y, int64_t M, int64_t F, int64_t K,
                         CUstream_st* stream);

namespace {

// Whether the few-rows kernels take x [..., K] by weight [N, K]; M: x's rows.
bool rows_kernel_applies(const torch::Tensor& x, const torch::Tensor& weight, int64_t M) {
  return weight.scalar_type() == x.scalar_type() && weight.device() == x.device() && weight.is_contiguous() &&
         aligned16(weight) && linear_rows_supports(M, weight.size(1), int(x.element_size()));
}

// x contiguous and 16-byte aligned, and an output of x's leading sizes and `width` columns.
std::pair<torch::Tensor, torch::Tensor> rows_operands(const torch::Tensor& x_in, int64_t width) {
  auto x = x_in.contiguous();
  if (!aligned16(x)) x = x.clone();  // a fresh allocation is aligned
  auto sizes = x_in.sizes().vec();
  sizes.back() = width;
  return {x, torch::empty(sizes, x.options())};
}

torch::Tensor linear_cuda(const torch::Tensor& x_in, const torch::Tensor& weight) {
  VISPEC_ASSERT(x_in.dim() >= 1 && weight.dim() == 2 && weight.size(1) == x_in.size(-1), "linear of ", x_in.sizes(),
                " by a weight of ", weight.sizes());
  const int64_t K = weight.size(1), N = weight.size(0), M = K > 0 ? x_in.numel() / K : 0;
  if (!rows_kernel_applies(x_in, weight, M)) return at::linear(x_in, weight);
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto [x, y] = rows_operands(x_in, N);
  check_launch(linear_rows(dtype_code(x), x.data_ptr(), weight.data_ptr(), y.data_ptr(), M, N, K, stream_of(x)),
               "linear");
  return y;
}

torch::Tensor linear_silu_mul_cuda(const torch::Tensor& x_in, const torch::Tensor& weight) {
  VISPEC_ASSERT(x_in.dim() >= 1 && weight.dim() == 2 && weight.size(1) == x_in.size(-1) && weight.size(0) % 2 == 0,
                "linear_silu_mul of ", x_in.sizes(), " by a weight of ", weight.sizes());
  const int64_t K = weight.size(1), F = weight.size(0) / 2, M = K > 0 ? x_in.numel() / K : 0;
  if (!rows_kernel_applies(x_in, weight, M)) return silu_mul_then(linear_cuda(x_in, weight));
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto [x, y] = rows_operands(x_in, F);
  check_launch(
      linear_silu_mul_rows(dtype_code(x), x.data_ptr(), weight.data_ptr(), y.data_ptr(), M, F, K, stream_of(x)),
      "linear_silu_mul");
  return y;
}

// 1, 2 and 4 rows (the kernel's, with odd columns) and 5 (cuBLAS's). SwiGLU's kernel is held to the two operators
// it replaces on the same device, bit for bit (its reference, silu_mul(linear) on the CPU, is checked through
// them: a gate multiplies two products, each within its tolerance, so their product may not be).
std::string kernel_check_linear(const c10::Device& device, c10::ScalarType dtype) {
  const auto w = check_pattern({70, 96}, 0.8, dtype).to(device);
  for (const int64_t rows : {int64_t(1), int64_t(2), int64_t(4), int64_t(5)}) {
    const auto x = check_pattern({rows, 96}, 1.9, dtype);
    auto problem = check_close("linear", linear_op(x.to(device), w), linear_op(x, w.cpu()), dtype);
    if (!problem.empty()) return problem;
    if (!torch::equal(linear_silu_mul_then(x.to(device), w), silu_mul_then(linear_op(x.to(device), w))))
      return "linear_silu_mul's kernel differs from linear then silu_mul";
  }
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) {
  m.impl("linear", &cuda::linear_cuda);
  m.impl("linear_silu_mul", &cuda::linear_silu_mul_cuda);
}
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def("linear(Tensor x, Tensor weight) -> Tensor");
  m.def("linear_silu_mul(Tensor x, Tensor weight) -> Tensor");
}

TORCH_LIBRARY_IMPL(vispec, CompositeExplicitAutograd, m) { m.impl("linear", &linear_any); }

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("linear_silu_mul", &linear_silu_mul_cpu); }

VISPEC_KERNEL(linear, 1, &cuda::kernel_check_linear);  // checks linear_silu_mul too
VISPEC_KERNEL(linear_silu_mul, 1, nullptr);

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight) {
  return use_fused(x, weight) ? linear_op(x, weight) : at::linear(x, weight);
}

at::Tensor linear_silu_mul(const at::Tensor& x, const at::Tensor& weight) {
  return use_fused(x, weight) ? linear_silu_mul_then(x, weight) : silu_mul(at::linear(x, weight));
}

}  // namespace vispec::kernels
