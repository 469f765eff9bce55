// How a draft carried to the next iteration follows its position's new distribution p (SCD, Speculative Coupled
// Decoding: decoding/sjd.cpp). SJD draws each carried draft afresh from p; SCD draws it coupled to the position's
// previous draft, so that consecutive drafts agree as often as they can and an accepted run grows. Every coupling
// keeps the new draft's marginal exactly p, so its stored q is p and verification stays lossless:
//   maximal  keep the old draft x (drawn from q) where u q(x) < p(x), else draw from norm(max(p - q, 0)): the
//            new draft equals the old with probability 1 - TV(p, q), the most any coupling allows
//   gumbel   argmax_x log p(x) + g(x), with g the position's own Gumbel noise, fixed until the position is
//            committed: drafts from nearby p mostly pick the same token
#pragma once

#include <torch/torch.h>

namespace vispec {

// drafts [B, M] int64 (each a sample of its q), q and p [B, M, V] float, u_keep and u_draw [B, M] uniforms in
// [0, 1) -> the new drafts [B, M] int64, each a sample of p.
torch::Tensor maximal_coupling(const torch::Tensor& drafts, const torch::Tensor& q, const torch::Tensor& p,
                               const torch::Tensor& u_keep, const torch::Tensor& u_draw);
// p [B, M, V] float, noise [B, M, V] uniforms in [0, 1) (the Gumbel noise is -log(-log u)) -> [B, M] int64, each a
// sample of p.
torch::Tensor gumbel_coupling(const torch::Tensor& p, const torch::Tensor& noise);

}  // namespace vispec
