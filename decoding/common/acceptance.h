// Acceptance rules of speculative decoding as pure functions of (p, q, drafted token, depth, parameters):
// no model, no cache, no randomness. Every speculative decoder calls these, so a rule is written once and any
// drafter can be combined with any rule (docs/decoders.md lists the rules and their parameters).
//
//   exact      accept x with min(1, p(x) / q(x)); on reject resample norm(max(0, p - q))     (lossless)
//   LANTERN    p~(x) = p(x) + s_m, s_j = sum_{l<=j} p(nn[x][l]), m = max{j < k : s_j <= delta}
//              accept with min(1, p~(x) / q(x)); TVD(p, p~) = s_m <= delta
//   LANTERN++  the same prefix with budget s_j <= (lambda - 1) p(x), so p(x) <= p~(x) <= lambda p(x);
//              on reject resample norm(max(0, p - q')), q' = q without the aggregated neighbours
//   Cool-SD    accept with f_i = min(1, w_i p(x) / q(x)) at draft depth i (1-based), w_i from a schedule;
//              resample from G* = norm(max(0, p - q f)) = norm(max(0, p - min(q, w p)))  (their Theorem 2)
//   GSD        accept with min(1, p(G) / q(G)), G = x and the tokens nearest to it in p's order that pass GSD's
//              filters (group_masses); on reject resample the residual norm(max(0, p - q))           (lossy)
// p and q are the processed (CFG, temperature, top-k/p) distributions at a position. Greedy decoding does not
// build one-hot distributions: greedy_accept_probabilities() is what the rules reduce to there.
#pragma once

#include <torch/torch.h>

#include "decoding/common/acceptance_params.h"

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

// ---- The rules over M rows at once: what every decoder's verification calls. p, q [M, V] are the target's and
// the drafter's processed distributions (any float dtype; the rules compute in float64), x [M] the drafted
// tokens, depth [M] their 1-based draft depths (Cool-SD's weight w_depth of a draft of `length`; ignored by
// the other rules), nn [M, >= k] the codes nearest to each x, nearest first (LANTERN rules only; undefined
// otherwise), embeddings [V, D] the target's image-token input embeddings (GSD's distance filter; undefined:
// no filter). Nothing here reads a value back to the host.
torch::Tensor accept_probabilities(const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& x,
                                   const torch::Tensor& depth, int64_t length, const AcceptanceParams& params,
                                   const torch::Tensor& nn, const torch::Tensor& embeddings = {});
// The distributions to sample from after each row's x was rejected, [M, V] float64: exact, the residual;
// Cool-SD, G*; LANTERN, p without x and its aggregated neighbours, then the residual against q; LANTERN++,
// the residual against q without the aggregated neighbours (they keep their target mass). With
// optimal_resampling both use G*, which for rules that accept at least as often as exact SD is the residual.
torch::Tensor rejection_distributions(const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& x,
                                      const torch::Tensor& depth, int64_t length, const AcceptanceParams& params,
                                      const torch::Tensor& nn);
// At temperature 0 p and q are one-hot and every rule reduces to "x is the target's argmax" (`match` [M]
// bool), except Cool-SD, which accepts a match with probability min(1, w_depth). No vocabulary-wide tensor.
torch::Tensor greedy_accept_probabilities(const torch::Tensor& match, const torch::Tensor& depth, int64_t length,
                                          const AcceptanceParams& params);
// norm(max(0, p - q)) per row, [M, V] float64; a row where that is all zero (p == q) gets p itself.
torch::Tensor residuals(const torch::Tensor& p, const torch::Tensor& q);

// LANTERN's aggregation for M rows: the relaxed mass p~(x) [M] float64 and how many of each x's nearest
// neighbours were folded in (m + 1) [M] int64, within budget [M] (LANTERN: delta; LANTERN++: (lambda - 1) p(x)).
struct RelaxedMasses {
  torch::Tensor p_tilde, aggregated;
};
RelaxedMasses relaxed_masses(const torch::Tensor& p, const torch::Tensor& x, const torch::Tensor& nn, int64_t k,
                             const torch::Tensor& budget);

// GSD's group for M rows: the draft x and its nearest tokens in the target's order (p ascending, ties by token
// id), group / 2 of them below x and (group - 1) / 2 above (its released code's 7 and 6 for 14; 12 and 12 for
// the paper's 25), each kept where |p(y) - p(x)| < gap and, with embeddings [V, D] and distance > 0, where
// |e_y - e_x|^2 < distance. The group's masses under p and q, [M] float64 each. A group of one is x alone: the
// exact rule's masses. The nearest tokens come from two top-k selections over one sortable key per token,
// O(V) per row, not a sort of the vocabulary.
struct GroupMasses {
  torch::Tensor p_group, q_group;
};
GroupMasses group_masses(const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& x,
                         const AcceptanceParams& params, const torch::Tensor& embeddings);

// ---- One row at a time, for MuLo-SD's host loop and the rules' own tests: the batched functions with M = 1. p and q
// are [V]; neighbours points at the k codes nearest to x.
struct RelaxedMass {
  double p_tilde = 0;
  int64_t aggregated = 0;
};
RelaxedMass lantern_mass(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double delta);
RelaxedMass lanternpp_mass(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double lambda);

// Cool-SD weights w_1 .. w_L for a draft of length L.
std::vector<double> cool_weights(const AcceptanceParams& params, int64_t length);

torch::Tensor residual(const torch::Tensor& p, const torch::Tensor& q);
// G* = norm(max(0, p - min(q, w p))); equals residual(p, q) for w >= 1.
torch::Tensor optimal_residual(const torch::Tensor& p, const torch::Tensor& q, double w);
double acceptance_probability(const torch::Tensor& p, const torch::Tensor& q, int64_t x, int64_t depth, int64_t length,
                              const AcceptanceParams& params, const int32_t* neighbours);
torch::Tensor rejection_distribution(const torch::Tensor& p, const torch::Tensor& q, int64_t x, int64_t depth,
                                     int64_t length, const AcceptanceParams& params, const int32_t* neighbours);

}  // namespace vispec
