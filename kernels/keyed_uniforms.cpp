#include "kernels/keyed_uniforms.h"

#include <torch/torch.h>

#include <optional>

#include "kernels/fused_ops.h"
#include "kernels/kernel_check.h"

namespace vispec {

at::Tensor uniforms_at(uint64_t seed, const at::Tensor& sample_ids, const at::Tensor& positions, Purpose purpose,
                       const at::Tensor& draws) {
  // On a GPU, the kernel set of float32 decides (the uniforms feed float32 sampling and acceptance there); a
  // CPU always takes the operator, its host loop being the generator itself.
  const auto device = positions.device();
  if (!device.is_cpu() && !kernels::use_fused(device, torch::kFloat32))
    return philox_uniforms(seed, sample_ids, positions, purpose, draws);
  const auto ids = sample_ids.to(device, torch::kInt64);
  const auto keys = positions.to(torch::kInt64);
  const auto drawn = draws.defined() ? std::optional<at::Tensor>(draws.to(device, torch::kInt64)) : std::nullopt;
  return kernels::keyed_uniforms(ids, keys, drawn, int64_t(seed), int64_t(purpose));
}

}  // namespace vispec
