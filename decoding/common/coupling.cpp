#include "decoding/common/coupling.h"

#include "decoding/common/acceptance.h"
#include "decoding/common/sampler.h"

namespace vispec {

torch::Tensor maximal_coupling(const torch::Tensor& drafts, const torch::Tensor& q, const torch::Tensor& p,
                               const torch::Tensor& u_keep, const torch::Tensor& u_draw) {
  const int64_t B = drafts.size(0), M = drafts.size(1), V = p.size(-1);
  const auto x = drafts.unsqueeze(-1);
  const auto px = p.gather(-1, x).squeeze(-1).to(torch::kFloat64);
  const auto qx = q.gather(-1, x).squeeze(-1).to(torch::kFloat64);
  const auto keep = (u_keep.to(px.device(), torch::kFloat64) * qx).lt(px);
  const auto drawn =
      sample_from_probs(residuals(p.reshape({B * M, V}), q.reshape({B * M, V})), u_draw.reshape(-1)).view({B, M});
  return torch::where(keep, drafts, drawn);
}

torch::Tensor gumbel_coupling(const torch::Tensor& p, const torch::Tensor& noise) {
  const auto g = -torch::log(-torch::log(noise.to(p.device(), torch::kFloat64)));
  return (torch::log(p.to(torch::kFloat64)) + g).argmax(-1);
}

}  // namespace vispec
