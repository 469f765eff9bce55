// vispec::silu_mul: its schema, CPU reference, CUDA binding and kernel check (kernels/README.md), and the C++ call
// that chooses between it and the composite formula.
#include "kernels/silu_mul.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "kernels/kernel_check.h"
#include "kernels/operator.h"
#include "kernels/vector_loops.h"

namespace vispec::kernels {

namespace {

// One row: out = T(T(silu(gate)) * up) over [gate | up], in float32 through the vector loops.
template <typename T>
struct SiluMulRow {
  explicit SiluMulRow(int64_t F) : F(F), gate(F), up(F), act(F) {}
  void operator()(const T* gate_up, T* out) {
    std::copy(gate_up, gate_up + F, gate.begin());
    std::copy(gate_up + F, gate_up + 2 * F, up.begin());
    cpu::silu_f32(gate.data(), act.data(), F);
    for (auto& a : act) a = float(T(a));
    cpu::multiply_f32(act.data(), up.data(), F);
    std::copy(act.begin(), act.end(), out);
  }
  int64_t F;
  std::vector<float> gate, up, act;
};
template <>
struct SiluMulRow<float> {  // no copies: the row is float32 already, and its roundings are the identity
  explicit SiluMulRow(int64_t F) : F(F) {}
  void operator()(const float* gate_up, float* out) {
    cpu::silu_f32(gate_up, out, F);
    cpu::multiply_f32(out, gate_up + F, F);
  }
  int64_t F;
};

void check_gate_up(const torch::Tensor& gate_up) {
  VISPEC_ASSERT(gate_up.dim() >= 1 && gate_up.size(-1) % 2 == 0, "silu_mul of ", gate_up.sizes());
}

// gate_up's leading sizes and F columns, in its dtype.
torch::Tensor gated_output(const torch::Tensor& gate_up) {
  auto sizes = gate_up.sizes().vec();
  sizes.back() /= 2;
  return torch::empty(sizes, gate_up.options());
}

torch::Tensor silu_mul_cpu(const torch::Tensor& gate_up_in) {
  check_gate_up(gate_up_in);
  const auto gate_up = gate_up_in.contiguous();
  const int64_t F = gate_up.size(-1) / 2, rows = gate_up.numel() / std::max<int64_t>(1, 2 * F);
  auto out = gated_output(gate_up);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, gate_up.scalar_type(), "vispec::silu_mul", [&] {
    const scalar_t* in = gate_up.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    // Rows per task: a decode step's few rows stay on one thread, a prefill's hundreds spread.
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, F));
    at::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
      SiluMulRow<scalar_t> row(F);
      for (int64_t r = r0; r < r1; ++r) row(in + r * 2 * F, o + r * F);
    });
  });
  return out;
}

torch::Tensor silu_mul_op(const torch::Tensor& gate_up) {
  static const auto op = operator_handle<torch::Tensor(const torch::Tensor&)>("vispec::silu_mul");
  return op.call(gate_up);
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/silu_mul.cu: rows x 2F -> rows x F.
int silu_mul(Dtype dtype, const void* gate_up, void* out, int64_t rows, int64_t F, CUstream_st* stream);

namespace {

torch::Tensor silu_mul_cuda(const torch::Tensor& gate_up_in) {
  check_gate_up(gate_up_in);
  const c10::cuda::CUDAGuard guard(gate_up_in.device());
  const auto gate_up = gate_up_in.contiguous();
  const int64_t F = gate_up.size(-1) / 2;
  auto out = gated_output(gate_up);
  check_launch(silu_mul(dtype_code(gate_up), gate_up.data_ptr(), out.data_ptr(), out.numel() / std::max<int64_t>(1, F),
                        F, stream_of(gate_up)),
               "silu_mul");
  return out;
}

std::string kernel_check_silu_mul(const c10::Device& device, c10::ScalarType dtype) {
  const auto x = check_pattern({3, 5, 96}, 0.1, dtype);
  return check_close("silu_mul", silu_mul_op(x.to(device)), silu_mul_op(x), dtype);
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("silu_mul", &cuda::silu_mul_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) { m.def("silu_mul(Tensor gate_up) -> Tensor"); }

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("silu_mul", &silu_mul_cpu); }

VISPEC_KERNEL(silu_mul, 1, &cuda::kernel_check_silu_mul);

at::Tensor silu_mul(const at::Tensor& gate_up) {
  if (use_fused(gate_up)) return silu_mul_op(gate_up);
  check_gate_up(gate_up);  // the operator's checks on both paths
  const auto halves = gate_up.chunk(2, -1);
  return torch::silu(halves[0]) * halves[1];
}

}  // namespace vispec::kernels
