// vispec::rope_write_kv: its schema, CPU reference, CUDA binding and kernel check (kernels/README.md), and its
// C++ call.
#include "kernels/rope_write_kv.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>

#include "core/check.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

// The checks every implementation makes before it touches memory (one message per mistake).
void check_rope_write_kv(const torch::Tensor& qkv, const torch::Tensor& rope, const torch::Tensor& k_cache,
                         const torch::Tensor& v_cache, const torch::Tensor& slots, int64_t n_head, int64_t n_kv_head) {
  VISPEC_ASSERT(qkv.dim() == 3 && k_cache.dim() == 4 && n_head > 0 && n_kv_head > 0, "rope_write_kv: qkv ", qkv.sizes(),
                ", cache ", k_cache.sizes());
  const int64_t B = qkv.size(0), T = qkv.size(1), Dh = k_cache.size(3);
  VISPEC_ASSERT(qkv.size(2) == (n_head + 2 * n_kv_head) * Dh && Dh % 2 == 0, "rope_write_kv: qkv ", qkv.sizes(),
                " for ", n_head, " + 2 x ", n_kv_head, " heads of ", Dh);
  VISPEC_ASSERT(k_cache.size(0) == B && k_cache.size(1) == n_kv_head && v_cache.sizes() == k_cache.sizes() &&
                    k_cache.is_contiguous() && v_cache.is_contiguous(),
                "rope_write_kv: caches ", k_cache.sizes(), " and ", v_cache.sizes(), " for ", B, " rows");
  VISPEC_ASSERT(k_cache.scalar_type() == qkv.scalar_type() && v_cache.scalar_type() == qkv.scalar_type(),
                "rope_write_kv: cache dtype ", k_cache.scalar_type(), ", activations ", qkv.scalar_type());
  VISPEC_ASSERT(rope.scalar_type() == torch::kFloat32 && rope.numel() == B * T * Dh, "rope_write_kv: rope ",
                rope.sizes(), " ", rope.scalar_type(), " for ", B, " x ", T, " x ", Dh);
  VISPEC_ASSERT(slots.scalar_type() == torch::kInt64 && slots.numel() == B * T, "rope_write_kv: slots ", slots.sizes(),
                " for ", B, " x ", T);
}

torch::Tensor rope_write_kv_cpu(const torch::Tensor& qkv_in, const torch::Tensor& rope_in, const torch::Tensor& k_cache,
                                const torch::Tensor& v_cache, const torch::Tensor& slots_in, int64_t n_head,
                                int64_t n_kv_head, bool half_split) {
  check_rope_write_kv(qkv_in, rope_in, k_cache, v_cache, slots_in, n_head, n_kv_head);
  const auto qkv = qkv_in.contiguous(), rope = rope_in.contiguous(), slots = slots_in.contiguous();
  const int64_t B = qkv.size(0), T = qkv.size(1), S = k_cache.size(2), Dh = k_cache.size(3), P = Dh / 2;
  const int64_t H = n_head, Hkv = n_kv_head, W = qkv.size(2);
  const int64_t* sp = slots.data_ptr<int64_t>();
  for (int64_t i = 0; i < B * T; ++i)
    VISPEC_ASSERT(sp[i] >= 0 && sp[i] < S, "rope_write_kv: slot ", sp[i], " outside the cache's ", S);
  auto q = torch::empty({B, H, T, Dh}, qkv.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, qkv.scalar_type(), "vispec::rope_write_kv", [&] {
    using T_ = scalar_t;
    const T_* in = qkv.data_ptr<T_>();
    const float* rp = rope.data_ptr<float>();
    T_ *qp = q.data_ptr<T_>(), *kp = k_cache.data_ptr<T_>(), *vp = v_cache.data_ptr<T_>();
    // Pair i of a head is (x[2i], x[2i+1]) for 2D RoPE, (x[i], x[i + Dh/2]) for 1D; both rotate by angle i.
    const int64_t second = half_split ? P : 1, stride = half_split ? 1 : 2;
    auto rotate = [&](const T_* x, const float* r, T_* out) {
      for (int64_t i = 0; i < P; ++i) {
        const int64_t a = i * stride, b = a + second;
        const float x0 = float(x[a]), x1 = float(x[b]), c = r[2 * i], s = r[2 * i + 1];
        out[a] = T_(x0 * c - x1 * s);
        out[b] = T_(x1 * c + x0 * s);
      }
    };
    at::parallel_for(0, B * T, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, W)), [&](int64_t e0, int64_t e1) {
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t b = e / T, t = e % T, slot = sp[e];
        const T_* x = in + e * W;
        const float* r = rp + e * Dh;
        for (int64_t h = 0; h < H; ++h) rotate(x + h * Dh, r, qp + ((b * H + h) * T + t) * Dh);
        for (int64_t h = 0; h < Hkv; ++h) {
          const int64_t at = ((b * Hkv + h) * S + slot) * Dh;
          rotate(x + (H + h) * Dh, r, kp + at);
          std::copy(x + (H + Hkv + h) * Dh, x + (H + Hkv + h + 1) * Dh, vp + at);
        }
      }
    });
  });
  return q;
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/rope_write_kv.cu: qkv [B, T, (H + 2 Hkv) Dh], rope [B, T, Dh/2, 2] float, slots [B, T], caches
// [B, Hkv, S, Dh], q [B, H, T, Dh].
int rope_write_kv(Dtype dtype, const void* qkv, const float* rope, const int64_t* slots, void* k_cache, void* v_cache,
                  void* q, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh, int64_t S, bool half_split,
                  CUstream_st* stream);

namespace {

torch::Tensor rope_write_kv_cuda(const torch::Tensor& qkv_in, const torch::Tensor& rope_in,
                                 const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                                 const torch::Tensor& slots_in, int64_t n_head, int64_t n_kv_head, bool half_split) {
  check_rope_write_kv(qkv_in, rope_in, k_cache, v_cache, slots_in, n_head, n_kv_head);
  const c10::cuda::CUDAGuard guard(qkv_in.device());
  const auto qkv = qkv_in.contiguous(), rope = rope_in.contiguous(), slots = slots_in.contiguous();
  const int64_t B = qkv.size(0), T = qkv.size(1), S = k_cache.size(2), Dh = k_cache.size(3);
  auto q = torch::empty({B, n_head, T, Dh}, qkv.options());
  check_launch(rope_write_kv(dtype_code(qkv), qkv.data_ptr(), rope.data_ptr<float>(), slots.data_ptr<int64_t>(),
                             k_cache.data_ptr(), v_cache.data_ptr(), q.data_ptr(), B, T, n_head, n_kv_head, Dh, S,
                             half_split, stream_of(qkv)),
               "rope_write_kv");
  return q;
}

// Grouped heads, both RoPE layouts: the same q and the same caches.
std::string kernel_check_rope_write_kv(const c10::Device& device, c10::ScalarType dtype) {
  const int64_t B = 2, T = 3, H = 4, Hkv = 2, Dh = 16, S = 8;
  const auto qkv = check_pattern({B, T, (H + 2 * Hkv) * Dh}, 0.4, dtype);
  const auto angles = check_pattern({B, T, Dh / 2}, 0.9, torch::kFloat32);
  const auto rope = torch::stack({torch::cos(angles), torch::sin(angles)}, -1);
  const auto slots = torch::tensor({1, 4, 6, 0, 2, 7}, torch::kInt64).view({B, T});
  for (const bool half_split : {false, true}) {
    auto k = torch::zeros({B, Hkv, S, Dh}, dtype), v = torch::zeros_like(k);
    auto kg = k.to(device), vg = v.to(device);
    auto problem = check_close(
        "rope_write_kv's q",
        kernels::rope_write_kv(qkv.to(device), rope.to(device), kg, vg, slots.to(device), H, Hkv, half_split),
        kernels::rope_write_kv(qkv, rope, k, v, slots, H, Hkv, half_split), dtype);
    if (problem.empty()) problem = check_close("rope_write_kv's keys", kg, k, dtype);
    if (problem.empty()) problem = check_close("rope_write_kv's values", vg, v, dtype);
    if (!problem.empty()) return problem;
  }
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("rope_write_kv", &cuda::rope_write_kv_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def(
      "rope_write_kv(Tensor qkv, Tensor rope, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor slots, int n_head, "
      "int n_kv_head, bool half_split) -> Tensor");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("rope_write_kv", &rope_write_kv_cpu); }

VISPEC_KERNEL(rope_write_kv, 1, &cuda::kernel_check_rope_write_kv);

at::Tensor rope_write_kv(const at::Tensor& qkv, const at::Tensor& rope, const at::Tensor& k_cache,
                         const at::Tensor& v_cache, const at::Tensor& slots, int64_t n_head, int64_t n_kv_head,
                         bool half_split) {
  using Tensor = const at::Tensor&;
  static const auto op = operator_handle<at::Tensor(Tensor, Tensor, Tensor, Tensor, Tensor, int64_t, int64_t, bool)>(
      "vispec::rope_write_kv");
  return op.call(qkv, rope, k_cache, v_cache, slots, n_head, n_kv_head, half_split);
}

}  // namespace vispec::kernels
