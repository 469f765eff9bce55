// vispec::draw_without_replacement: its schema, its checks and the arguments of kernels/draws_body.h made from its
// tensors, the CPU reference (the body with one CPU thread playing every lane in turn, rows over LibTorch's
// threads), the CUDA binding and kernel check (kernels/README.md), and its C++ call.
#include "kernels/draws.h"

#include "core/check.h"
#include "kernels/cpu_team.h"
#include "kernels/draws_body.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

// The draws' inputs made contiguous, their outputs and scratch on q's device, and the body's arguments.
struct DrawsCall {
  int64_t rows = 0;  // B M
  torch::Tensor q, u, left, tokens, probs;
  draws::Args<float> f32;   // q float32
  draws::Args<double> f64;  // q float64
  bool double_q = false;
};

DrawsCall prepare_draws(const torch::Tensor& q, const torch::Tensor& u) {
  VISPEC_ASSERT(q.dim() == 3 && u.dim() == 3 && u.size(0) == q.size(0) && u.size(1) == q.size(1) && q.size(2) >= 1 &&
                    (q.scalar_type() == torch::kFloat32 || q.scalar_type() == torch::kFloat64) &&
                    u.scalar_type() == torch::kFloat64 && u.device() == q.device(),
                "draw_without_replacement: q ", q.sizes(), " ", q.scalar_type(), " on ", q.device(), ", u ", u.sizes(),
                " ", u.scalar_type(), " on ", u.device(), ": not [B, M, V] float32 or float64 and [B, M, n] float64");
  const int64_t B = q.size(0), M = q.size(1), V = q.size(2), n = u.size(2);
  DrawsCall c;
  c.rows = B * M;
  c.q = q.contiguous();
  c.u = u.contiguous();
  c.left = torch::empty({B, M, V}, q.options().dtype(torch::kFloat64));
  c.tokens = torch::empty({B, M, n}, q.options().dtype(torch::kInt64));
  c.probs = torch::empty({B, M, n}, q.options().dtype(torch::kFloat64));
  c.double_q = q.scalar_type() == torch::kFloat64;
  auto point = [&](auto& a) {
    a.u = c.u.data_ptr<double>(), a.left = c.left.data_ptr<double>(), a.tokens = c.tokens.data_ptr<int64_t>();
    a.probs = c.probs.data_ptr<double>(), a.V = V, a.n = n;
  };
  point(c.f32);
  point(c.f64);
  if (c.double_q) c.f64.q = c.q.data_ptr<double>();
  else c.f32.q = c.q.data_ptr<float>();
  return c;
}

std::tuple<torch::Tensor, torch::Tensor> draw_without_replacement_cpu(const torch::Tensor& q, const torch::Tensor& u) {
  const auto c = prepare_draws(q, u);
  auto draw_rows = [&](const auto& args) {
    for_each_row_on_teams(c.rows, [&](CpuTeam& team, int64_t r) { draws::draw_row(team, args, r); });
  };
  if (c.double_q) draw_rows(c.f64);
  else draw_rows(c.f32);
  return {c.tokens, c.probs};
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/draws.cu: the draws, one block of team::kLanes threads per row of q.
int draw_without_replacement(const draws::Args<float>& args, int64_t rows, CUstream_st* stream);
int draw_without_replacement(const draws::Args<double>& args, int64_t rows, CUstream_st* stream);

namespace {

std::tuple<torch::Tensor, torch::Tensor> draw_without_replacement_cuda(const torch::Tensor& q, const torch::Tensor& u) {
  const c10::cuda::CUDAGuard guard(q.device());
  const auto c = prepare_draws(q, u);
  const auto stream = stream_of(q);
  check_launch(
      c.double_q ? draw_without_replacement(c.f64, c.rows, stream) : draw_without_replacement(c.f32, c.rows, stream),
      "draw_without_replacement");
  return {c.tokens, c.probs};
}

// EAGLE-1's draws without replacement: 3 x 2 rows of q (one with a single code of mass, so its later draws find
// nothing left), 4 draws each: the same tokens and probabilities, bit for bit (the same body on both sides).
std::string kernel_check_draws(const c10::Device& device, c10::ScalarType) {
  auto q = torch::softmax(check_pattern({3, 2, 40}, 0.7, torch::kFloat32) * 4, -1);
  q[1][1].zero_();
  q[1][1][17] = 1.0f;
  const auto u = (check_pattern({3, 2, 4}, 1.9, torch::kFloat32).to(torch::kFloat64) + 1.7) / 3.4;
  const auto gpu = kernels::draw_without_replacement(q.to(device), u.to(device));
  const auto cpu = kernels::draw_without_replacement(q, u);
  return same_result(gpu, cpu) ? "" : "draw_without_replacement drew otherwise";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("draw_without_replacement", &cuda::draw_without_replacement_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) { m.def("draw_without_replacement(Tensor q, Tensor u) -> (Tensor, Tensor)"); }

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("draw_without_replacement", &draw_without_replacement_cpu); }

VISPEC_KERNEL(draw_without_replacement, 1, &cuda::kernel_check_draws);

std::tuple<at::Tensor, at::Tensor> draw_without_replacement(const at::Tensor& q, const at::Tensor& u) {
  static const auto op = operator_handle<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&)>(
      "vispec::draw_without_replacement");
  return op.call(q, u);
}

}  // namespace vispec::kernels
