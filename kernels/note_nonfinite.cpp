// vispec::note_nonfinite: its schema, CPU reference, CUDA binding and kernel check (kernels/README.md), and the C++
// call that chooses between it and the composite formula.
#include "kernels/note_nonfinite.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <cstdint>
#include <limits>

#include "core/check.h"
#include "kernels/kernel_check.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

void check_note_nonfinite(const torch::Tensor& x, const torch::Tensor& flag) {
  VISPEC_ASSERT(flag.dim() == 0 && flag.scalar_type() == torch::kBool && flag.device() == x.device(),
                "note_nonfinite: the flag is ", flag.sizes(), " ", flag.scalar_type(), " on ", flag.device(),
                ", not a 0-dim bool on ", x.device());
}

// Whether any of n values is NaN or infinite: its exponent bits all set (no early exit, so the loop vectorises).
template <typename Bits>
bool any_nonfinite(const Bits* v, int64_t n, Bits exponent) {
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) bad |= (v[i] & exponent) == exponent;
  return bad;
}

void note_nonfinite_cpu(const torch::Tensor& x_in, const torch::Tensor& flag) {
  check_note_nonfinite(x_in, flag);
  const auto x = x_in.contiguous();
  const int64_t n = x.numel();
  std::atomic<bool> bad{false};
  at::parallel_for(0, n, 1 << 16, [&](int64_t i0, int64_t i1) {
    bool found = false;
    switch (x.scalar_type()) {
      case torch::kFloat32:
        found = any_nonfinite(reinterpret_cast<const uint32_t*>(x.data_ptr()) + i0, i1 - i0, uint32_t(0x7f800000));
        break;
      case torch::kFloat64:
        found =
            any_nonfinite(reinterpret_cast<const uint64_t*>(x.data_ptr()) + i0, i1 - i0, uint64_t(0x7ff0000000000000));
        break;
      case torch::kBFloat16:
        found = any_nonfinite(reinterpret_cast<const uint16_t*>(x.data_ptr()) + i0, i1 - i0, uint16_t(0x7f80));
        break;
      case torch::kHalf:
        found = any_nonfinite(reinterpret_cast<const uint16_t*>(x.data_ptr()) + i0, i1 - i0, uint16_t(0x7c00));
        break;
      default: VISPEC_FAIL("note_nonfinite: ", x.scalar_type(), " values (a floating dtype is watched)");
    }
    if (found) bad = true;
  });
  if (bad) flag.fill_(true);
}

void note_nonfinite_op(const torch::Tensor& x, const torch::Tensor& flag) {
  static const auto op = operator_handle<void(const torch::Tensor&, const torch::Tensor&)>("vispec::note_nonfinite");
  op.call(x, flag);
}

void note_nonfinite_composite(const torch::Tensor& x, const torch::Tensor& flag) {
  flag.logical_or_(torch::isfinite(x).logical_not().any());
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/note_nonfinite.cu: x [n] in dtype: *flag (a device bool) set where a value is NaN or infinite.
int note_nonfinite(Dtype dtype, const void* x, int64_t n, bool* flag, CUstream_st* stream);

namespace {

void note_nonfinite_cuda(const torch::Tensor& x_in, const torch::Tensor& flag) {
  check_note_nonfinite(x_in, flag);
  if (x_in.scalar_type() == torch::kFloat64) return note_nonfinite_composite(x_in, flag);  // no kernel for it
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto x = x_in.contiguous();
  check_launch(note_nonfinite(dtype_code(x), x.data_ptr(), x.numel(), flag.data_ptr<bool>(), stream_of(x)),
               "note_nonfinite");
}

// Values all finite, one NaN, one infinity; and a flag already set stays set.
std::string kernel_check_note_nonfinite(const c10::Device& device, c10::ScalarType dtype) {
  for (int bad = 0; bad < 4; ++bad) {
    const auto x = check_pattern({3, 700}, 0.4, dtype);
    if (bad == 1) x[1][333].fill_(std::numeric_limits<double>::quiet_NaN());
    if (bad == 2) x[2][699].fill_(-std::numeric_limits<double>::infinity());
    const auto flag = torch::full({}, bad == 3, torch::kBool), on_device = flag.to(device);
    note_nonfinite_op(x, flag);
    note_nonfinite_op(x.to(device), on_device);
    if (!same_result(on_device, flag)) return "note_nonfinite set another flag";
  }
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("note_nonfinite", &cuda::note_nonfinite_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) { m.def("note_nonfinite(Tensor x, Tensor(a!) flag) -> ()"); }

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("note_nonfinite", &note_nonfinite_cpu); }

VISPEC_KERNEL(note_nonfinite, 1, &cuda::kernel_check_note_nonfinite);

void note_nonfinite(const at::Tensor& x, const at::Tensor& flag) {
  if (use_fused(x)) return note_nonfinite_op(x, flag);
  check_note_nonfinite(x, flag);  // the operator's checks on both paths
  note_nonfinite_composite(x, flag);
}

}  // namespace vispec::kernels
