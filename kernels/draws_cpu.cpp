// vispec::draw_without_replacement's checks and its CPU implementation, the reference of the CUDA kernel: the body
// of kernels/draws_body.h with one CPU thread playing every lane in turn, rows spread over LibTorch's threads.
#include <torch/torch.h>

#include "core/check.h"
#include "kernels/cpu_team.h"
#include "kernels/draws_op.h"
#include "kernels/fused_ops_cpu.h"

namespace vispec::kernels {

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

namespace cpu {

std::tuple<torch::Tensor, torch::Tensor> draw_without_replacement(const torch::Tensor& q, const torch::Tensor& u) {
  const auto c = prepare_draws(q, u);
  auto draw_rows = [&](const auto& args) {
    for_each_row_on_teams(c.rows, [&](CpuTeam& team, int64_t r) { draws::draw_row(team, args, r); });
  };
  if (c.double_q) draw_rows(c.f64);
  else draw_rows(c.f32);
  return {c.tokens, c.probs};
}

}  // namespace cpu
}  // namespace vispec::kernels
