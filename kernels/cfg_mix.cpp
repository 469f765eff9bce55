// vispec::cfg_mix: its schema, CPU reference, CUDA binding and kernel check (kernels/README.md), and the C++ call
// that chooses between it and the composite formula.
#include "kernels/cfg_mix.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <type_traits>
#include <vector>

#include "core/check.h"
#include "kernels/kernel_check.h"
#include "kernels/operator.h"
#include "kernels/vector_loops.h"

namespace vispec::kernels {

namespace {

void check_cfg_mix(const torch::Tensor& logits) {
  VISPEC_ASSERT(logits.dim() >= 1 && logits.size(0) % 2 == 0, "cfg_mix: logits ", logits.sizes(),
                " are not [cond; uncond] rows");
}

torch::Tensor cfg_mix_cpu(const torch::Tensor& logits_in, double scale) {
  check_cfg_mix(logits_in);
  const auto logits = logits_in.contiguous();
  auto sizes = logits.sizes().vec();
  sizes[0] /= 2;
  auto out = torch::empty(sizes, logits.options().dtype(torch::kFloat32));
  const int64_t n = out.numel();
  float* o = out.data_ptr<float>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, logits.scalar_type(), "vispec::cfg_mix", [&] {
    const scalar_t* cond = logits.data_ptr<scalar_t>();
    constexpr bool is_float = std::is_same_v<scalar_t, float>;
    at::parallel_for(0, n, 16384, [&](int64_t i0, int64_t i1) {
      std::vector<float> c, u;  // another dtype's span in float32
      if (!is_float) {
        c.assign(cond + i0, cond + i1);
        u.assign(cond + n + i0, cond + n + i1);
      }
      const float* cp = is_float ? reinterpret_cast<const float*>(cond) + i0 : c.data();
      const float* up = is_float ? reinterpret_cast<const float*>(cond) + n + i0 : u.data();
      cpu::cfg_mix_f32(cp, up, float(scale), o + i0, i1 - i0);
    });
  });
  return out;
}

torch::Tensor cfg_mix_op(const torch::Tensor& logits, double scale) {
  static const auto op = operator_handle<torch::Tensor(const torch::Tensor&, double)>("vispec::cfg_mix");
  return op.call(logits, scale);
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/cfg_mix.cu: logits [2, n] (cond, uncond) in dtype -> out [n] float: uncond + scale (cond - uncond).
int cfg_mix(Dtype dtype, const void* logits, float* out, int64_t n, float scale, CUstream_st* stream);

namespace {

torch::Tensor cfg_mix_cuda(const torch::Tensor& logits_in, double scale) {
  check_cfg_mix(logits_in);
  const c10::cuda::CUDAGuard guard(logits_in.device());
  const auto logits = logits_in.contiguous();
  auto sizes = logits.sizes().vec();
  sizes[0] /= 2;
  auto out = torch::empty(sizes, logits.options().dtype(torch::kFloat32));
  check_launch(cfg_mix(dtype_code(logits), logits.data_ptr(), out.data_ptr<float>(), out.numel(), float(scale),
                       stream_of(logits)),
               "cfg_mix");
  return out;
}

// The same bits (three float32 operations, rounded once each on both sides).
std::string kernel_check_cfg_mix(const c10::Device& device, c10::ScalarType dtype) {
  const auto pair = check_pattern({2, 3, 70}, 0.2, dtype) * 4;
  return same_result(cfg_mix_op(pair.to(device), 2.5), cfg_mix_op(pair, 2.5)) ? "" : "cfg_mix mixed other logits";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("cfg_mix", &cuda::cfg_mix_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) { m.def("cfg_mix(Tensor logits, float scale) -> Tensor"); }

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("cfg_mix", &cfg_mix_cpu); }

VISPEC_KERNEL(cfg_mix, 1, &cuda::kernel_check_cfg_mix);

at::Tensor cfg_mix(const at::Tensor& logits, double scale) {
  if (use_fused(logits)) return cfg_mix_op(logits, scale);
  check_cfg_mix(logits);
  const int64_t B = logits.size(0) / 2;
  auto c = logits.narrow(0, 0, B).to(torch::kFloat32), u = logits.narrow(0, B, B).to(torch::kFloat32);
  return u + scale * (c - u);
}

}  // namespace vispec::kernels
