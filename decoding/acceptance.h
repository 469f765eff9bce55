// Acceptance rules of speculative decoding as pure functions of (p, q, drafted token, depth, parameters):
// no model, no cache, no randomness. Every speculative decoder calls these, so a rule is written once and any
// drafter can be combined with any rule (the README lists the rules and their parameters).
//
//   exact      accept x with min(1, p(x) / q(x)); on reject resample norm(max(0, p - q))     (lossless)
//   LANTERN    p~(x) = p(x) + s_m, s_j = sum_{l<=j} p(nn[x][l]), m = max{j < k : s_j <= delta}
//              accept with min(1, p~(x) / q(x)); TVD(p, p~) = s_m <= delta
//   LANTERN++  the same prefix with budget s_j <= (lambda - 1) p(x), so p(x) <= p~(x) <= lambda p(x);
//              on reject resample norm(max(0, p - q')), q' = q without the aggregated neighbours
//   Cool-SD    accept with f_i = min(1, w_i p(x) / q(x)) at draft depth i (1-based), w_i from a schedule;
//              resample from G* = norm(max(0, p - q f)) = norm(max(0, p - min(q, w p)))  (their Theorem 2)
// p and q are the processed (CFG, temperature, top-k/p) distributions at one position, [V] float tensors.
// Greedy decoding passes one-hot p and q; the rules then reduce to "x is the argmax".
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

enum class AcceptRule { kExact, kLantern, kLanternPlusPlus, kCoolSd };
enum class CoolSchedule { kUniform, kExponential, kLinear };

struct AcceptanceParams {
  AcceptRule rule = AcceptRule::kExact;
  int64_t k = 1000;        // LANTERN / LANTERN++: nearest neighbours considered
  double delta = 0.1;      // LANTERN: TVD budget
  double lambda = 3.0;     // LANTERN++: multiplicative budget
  CoolSchedule schedule = CoolSchedule::kExponential;
  double budget = 1.1;     // Cool-SD: c, the mean of w over the draft length
  double nu = 0.7;         // Cool-SD exponential decay
  double mu = std::numeric_limits<double>::quiet_NaN();  // Cool-SD normaliser; NaN = mean of w equals c (our choice)
  double slope = 0.1;      // Cool-SD linear: w_i = c (1 + slope ((L + 1) / 2 - i)), mean c (our reading of eq 17)
  bool optimal_resampling = false;  // LANTERN rules: resample from G* (Cool-SD's Fig. 4 ablation)
  bool needs_neighbours() const { return rule == AcceptRule::kLantern || rule == AcceptRule::kLanternPlusPlus; }
};

AcceptRule parse_accept_rule(const std::string& name);  // exact | lantern | lanternpp | coolsd
CoolSchedule parse_cool_schedule(const std::string& name);  // uniform | exponential | linear

// LANTERN's aggregation: the relaxed mass of x and how many of its nearest neighbours were folded in (m + 1).
struct RelaxedMass {
  double p_tilde = 0;
  int64_t aggregated = 0;
};
// p [V]; neighbours: the codes nearest to x, nearest first (at least k of them).
RelaxedMass lantern_mass(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double delta);
RelaxedMass lanternpp_mass(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double lambda);

// Cool-SD weights w_1 .. w_L for a draft of length L.
std::vector<double> cool_weights(const AcceptanceParams& params, int64_t length);

// norm(max(0, p - q)); if that is all zero (p == q), p itself.
torch::Tensor residual(const torch::Tensor& p, const torch::Tensor& q);
// G* = norm(max(0, p - min(q, w p))); equals residual(p, q) for w >= 1.
torch::Tensor optimal_residual(const torch::Tensor& p, const torch::Tensor& q, double w);

// The probability of accepting drafted x at 1-based depth `depth` of a draft of length `length` (for
// Cool-SD's schedule); `neighbours` is needed by the LANTERN rules only.
double acceptance_probability(const torch::Tensor& p, const torch::Tensor& q, int64_t x, int64_t depth,
                              int64_t length, const AcceptanceParams& params, const int32_t* neighbours);
// The distribution to sample from after drafted x was rejected at that depth: exact, the residual; Cool-SD,
// G*; LANTERN, p without x and its aggregated neighbours, then the residual against q; LANTERN++, the residual
// against q without the aggregated neighbours (they keep their target mass). With optimal_resampling both use
// G*, which for rules that accept at least as often as exact SD is the plain residual.
torch::Tensor rejection_distribution(const torch::Tensor& p, const torch::Tensor& q, int64_t x, int64_t depth,
                                     int64_t length, const AcceptanceParams& params, const int32_t* neighbours);

}  // namespace vispec
