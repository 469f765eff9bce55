// vispec::attend_cache: its schema, implementations (LibTorch's fused attention on every backend, CUDA's kernel
// where it applies), kernel check (kernels/README.md) and C++ call.
#include "kernels/attend_cache.h"

#include <cmath>

#include "core/check.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

// On every backend (the CPU's, and CUDA's where the kernel does not apply): LibTorch's fused attention over a
// narrowed view of the caches, its output laid out for the output projection.
torch::Tensor attend_cache_any(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                               int64_t keys, const std::optional<torch::Tensor>& mask, bool causal) {
  const auto k = k_cache.narrow(2, 0, keys), v = v_cache.narrow(2, 0, keys);
  const bool grouped = k.size(1) != q.size(1);
  const auto y = at::scaled_dot_product_attention(q, k, v, mask, 0.0, causal && !mask, {}, grouped);
  return y.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/attend_cache.cu: the head widths the kernel is built for (others take attend_cache_any), and the launch.
bool attend_supports(int64_t Dh);
int attend(Dtype dtype, const AttendArgs& args, CUstream_st* stream);

namespace {

torch::Tensor attend_cache_cuda(const torch::Tensor& q_in, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                                int64_t keys, const std::optional<torch::Tensor>& mask, bool causal) {
  VISPEC_ASSERT(q_in.dim() == 4 && k_cache.dim() == 4 && v_cache.sizes() == k_cache.sizes() && keys >= 0 &&
                    keys <= k_cache.size(2) && k_cache.size(3) == q_in.size(3) && k_cache.size(0) == q_in.size(0),
                "attend_cache: q ", q_in.sizes(), ", caches ", k_cache.sizes(), ", keys ", keys);
  const int64_t B = q_in.size(0), H = q_in.size(1), T = q_in.size(2), Dh = q_in.size(3), Hkv = k_cache.size(1);
  const auto beside_q = [&](const torch::Tensor& t) {
    return t.device() == q_in.device() && t.scalar_type() == q_in.scalar_type() && t.is_contiguous() && aligned16(t);
  };
  const bool kernel_applies = (mask || !causal) && attend_supports(Dh) && Hkv > 0 && H % Hkv == 0 &&
                              beside_q(k_cache) && beside_q(v_cache) &&
                              (!mask || (mask->scalar_type() == torch::kBool && mask->device() == q_in.device() &&
                                         mask->dim() == 4 && mask->size(1) == 1 && mask->size(2) == T &&
                                         mask->size(3) == keys && (mask->size(0) == 1 || mask->size(0) == B)));
  if (!kernel_applies) return attend_cache_any(q_in, k_cache, v_cache, keys, mask, causal);
  const c10::cuda::CUDAGuard guard(q_in.device());
  const auto q = q_in.contiguous();
  auto out = torch::empty({B, T, H * Dh}, q.options());
  AttendArgs args{q.data_ptr(),
                  k_cache.data_ptr(),
                  v_cache.data_ptr(),
                  nullptr,
                  out.data_ptr(),
                  B,
                  H,
                  Hkv,
                  T,
                  k_cache.size(2),
                  Dh,
                  keys,
                  0,
                  0,
                  0,
                  float(1.0 / std::sqrt(double(Dh)))};
  if (mask) {
    args.mask = mask->data_ptr<bool>();
    args.mask_b = mask->size(0) == 1 ? 0 : mask->stride(0);
    args.mask_t = mask->stride(2);
    args.mask_k = mask->stride(3);
  }
  check_launch(attend(dtype_code(q), args, stream_of(q)), "attend_cache");
  return out;
}

// Two head widths, grouped heads, 70 of 80 slots (three chunks of 32 keys, the last partial); masks per row and
// query (a row whose middle chunk is refused whole: skipped unread), one shared by the rows, and none (every key).
std::string kernel_check_attend_cache(const c10::Device& device, c10::ScalarType dtype) {
  const int64_t B = 2, T = 3, H = 4, Hkv = 2;
  for (const int64_t width : {int64_t(32), int64_t(64)}) {
    const int64_t keys = 70, slots = 80;
    const auto q = check_pattern({B, H, T, width}, 0.6, dtype);
    const auto kc = check_pattern({B, Hkv, slots, width}, 1.7, dtype);
    const auto vc = check_pattern({B, Hkv, slots, width}, 2.9, dtype);
    const auto key = torch::arange(keys, torch::kInt64).view({1, 1, 1, keys});
    const auto query = torch::arange(T, torch::kInt64).view({1, 1, T, 1});
    const auto row0 = key <= query + 60;                                 // a causal chain after 60 keys
    const auto row1 = (key < 10) | ((key >= 64) & (key <= query + 64));  // keys 10..63 refused
    const auto per_row = torch::cat({row0, row1}, 0);
    for (const auto& mask :
         {std::optional<torch::Tensor>(per_row), std::optional<torch::Tensor>(row0), std::optional<torch::Tensor>()}) {
      const auto gpu =
          kernels::attend_cache(q.to(device), kc.to(device), vc.to(device), keys,
                                mask ? std::optional<torch::Tensor>(mask->to(device)) : std::nullopt, false);
      const auto problem = check_close("attend_cache", gpu, kernels::attend_cache(q, kc, vc, keys, mask, false), dtype);
      if (!problem.empty()) return problem;
    }
  }
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("attend_cache", &cuda::attend_cache_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def("attend_cache(Tensor q, Tensor k_cache, Tensor v_cache, int keys, Tensor? mask, bool causal) -> Tensor");
}

TORCH_LIBRARY_IMPL(vispec, CompositeExplicitAutograd, m) { m.impl("attend_cache", &attend_cache_any); }

VISPEC_KERNEL(attend_cache, 1, &cuda::kernel_check_attend_cache);

at::Tensor attend_cache(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache, int64_t keys,
                        const std::optional<at::Tensor>& mask, bool causal) {
  using Tensor = const at::Tensor&;
  static const auto op =
      operator_handle<at::Tensor(Tensor, Tensor, Tensor, int64_t, const std::optional<at::Tensor>&, bool)>(
          "vispec::attend_cache");
  return op.call(q, k_cache, v_cache, keys, mask, causal);
}

}  // namespace vispec::kernels
