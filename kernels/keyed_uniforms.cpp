// vispec::keyed_uniforms: its schema, CPU reference, CUDA binding and kernel check (kernels/README.md), and
// uniforms_at, which chooses between it and core/rng.h's tensor formula.
#include "kernels/keyed_uniforms.h"

#include "core/check.h"
#include "core/philox.h"
#include "kernels/kernel_check.h"
#include "kernels/operator.h"

namespace vispec {
namespace kernels {

namespace {

// The checks every implementation makes before it touches memory (one message per mistake).
void check_keyed_uniforms(const torch::Tensor& sample_ids, const torch::Tensor& positions,
                          const std::optional<torch::Tensor>& draws) {
  VISPEC_ASSERT(positions.dim() == 2 && positions.scalar_type() == torch::kInt64, "keyed_uniforms: positions ",
                positions.sizes(), " ", positions.scalar_type());
  VISPEC_ASSERT(
      sample_ids.dim() == 1 && sample_ids.size(0) == positions.size(0) && sample_ids.scalar_type() == torch::kInt64,
      "keyed_uniforms: sample ids ", sample_ids.sizes(), " for positions ", positions.sizes());
  VISPEC_ASSERT(!draws || (draws->sizes() == positions.sizes() && draws->scalar_type() == torch::kInt64),
                "keyed_uniforms: draws ", draws ? draws->sizes() : positions.sizes(), " for positions ",
                positions.sizes());
}

torch::Tensor keyed_uniforms_cpu(const torch::Tensor& sample_ids_in, const torch::Tensor& positions_in,
                                 const std::optional<torch::Tensor>& draws_in, int64_t seed, int64_t purpose) {
  check_keyed_uniforms(sample_ids_in, positions_in, draws_in);
  const auto ids = sample_ids_in.contiguous(), positions = positions_in.contiguous();
  const auto draws = draws_in ? draws_in->contiguous() : torch::Tensor();
  const int64_t B = positions.size(0), C = positions.size(1);
  auto u = torch::empty({B, C}, torch::kFloat64);
  const int64_t *ip = ids.data_ptr<int64_t>(), *pp = positions.data_ptr<int64_t>();
  const int64_t* dp = draws.defined() ? draws.data_ptr<int64_t>() : nullptr;
  double* up = u.data_ptr<double>();
  for (int64_t i = 0; i < B * C; ++i)
    up[i] = philox::keyed_uniform(uint64_t(seed), uint64_t(ip[i / C]), uint32_t(pp[i]), uint32_t(purpose),
                                  dp ? uint32_t(dp[i]) : 0u);
  return u;
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/keyed_uniforms.cu: ids [B], positions and draws (or nullptr: draw 0) [B, C] -> u [B, C].
int keyed_uniforms(const int64_t* ids, const int64_t* positions, const int64_t* draws, double* u, int64_t B, int64_t C,
                   uint64_t seed, uint32_t purpose, CUstream_st* stream);

namespace {

torch::Tensor keyed_uniforms_cuda(const torch::Tensor& sample_ids_in, const torch::Tensor& positions_in,
                                  const std::optional<torch::Tensor>& draws_in, int64_t seed, int64_t purpose) {
  check_keyed_uniforms(sample_ids_in, positions_in, draws_in);
  VISPEC_ASSERT(
      sample_ids_in.device() == positions_in.device() && (!draws_in || draws_in->device() == positions_in.device()),
      "keyed_uniforms: sample ids, positions and draws on one device");
  const c10::cuda::CUDAGuard guard(positions_in.device());
  const auto ids = sample_ids_in.contiguous(), positions = positions_in.contiguous();
  const auto draws = draws_in ? draws_in->contiguous() : torch::Tensor();
  auto u = torch::empty(positions.sizes(), positions.options().dtype(torch::kFloat64));
  check_launch(
      keyed_uniforms(ids.data_ptr<int64_t>(), positions.data_ptr<int64_t>(),
                     draws.defined() ? draws.data_ptr<int64_t>() : nullptr, u.data_ptr<double>(), positions.size(0),
                     positions.size(1), uint64_t(seed), uint32_t(purpose), stream_of(positions)),
      "keyed_uniforms");
  return u;
}

// The same bits (integer arithmetic, then one exact conversion), with and without draws.
std::string kernel_check_keyed_uniforms(const c10::Device& device, c10::ScalarType) {
  const auto ids = torch::tensor({int64_t(0), int64_t(7), (int64_t(1) << 40) + 3}, torch::kInt64);
  const auto positions = torch::arange(12, torch::kInt64).view({3, 4}) * 977;
  const auto draws = positions.remainder(5);
  for (const auto& d : {std::optional<torch::Tensor>(), std::optional<torch::Tensor>(draws)}) {
    const auto gpu = kernels::keyed_uniforms(ids.to(device), positions.to(device),
                                             d ? std::optional<torch::Tensor>(d->to(device)) : std::nullopt, -5, 2);
    if (!same_result(gpu, kernels::keyed_uniforms(ids, positions, d, -5, 2)))
      return "keyed_uniforms drew other numbers";
  }
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("keyed_uniforms", &cuda::keyed_uniforms_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def("keyed_uniforms(Tensor sample_ids, Tensor positions, Tensor? draws, int seed, int purpose) -> Tensor");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("keyed_uniforms", &keyed_uniforms_cpu); }

VISPEC_KERNEL(keyed_uniforms, 1, &cuda::kernel_check_keyed_uniforms);

at::Tensor keyed_uniforms(const at::Tensor& sample_ids, const at::Tensor& positions,
                          const std::optional<at::Tensor>& draws, int64_t seed, int64_t purpose) {
  using Tensor = const at::Tensor&;
  static const auto op =
      operator_handle<at::Tensor(Tensor, Tensor, const std::optional<at::Tensor>&, int64_t, int64_t)>(
          "vispec::keyed_uniforms");
  return op.call(sample_ids, positions, draws, seed, purpose);
}

}  // namespace kernels

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
