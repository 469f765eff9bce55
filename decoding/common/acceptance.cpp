#include "decoding/common/acceptance.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/check.h"

namespace vispec {

namespace {
torch::Tensor f64(const torch::Tensor& t) { return t.to(torch::kFloat64); }

// w_depth for every row (Cool-SD), float64 [M] on depth's device.
torch::Tensor cool_weights_at(const AcceptanceParams& a, int64_t length, const torch::Tensor& depth) {
  const auto w = torch::tensor(cool_weights(a, length), torch::kFloat64).to(depth.device());
  return w.index_select(0, (depth.to(torch::kInt64) - 1).clamp(0, length - 1));
}

// The budget each row's aggregation may spend: LANTERN's delta, LANTERN++'s (lambda - 1) p(x).
RelaxedMasses relaxed_for_rule(const torch::Tensor& p, const torch::Tensor& x, const AcceptanceParams& a,
                               const torch::Tensor& nn) {
  const auto budget = a.rule == AcceptRule::kLantern
                          ? torch::full({p.size(0)}, a.delta, p.options().dtype(torch::kFloat64))
                          : (a.lambda - 1.0) * f64(p).gather(1, x.view({-1, 1})).squeeze(1);
  return relaxed_masses(p, x, nn, a.k, budget);
}

// rows [M, V] with the first `count` [M] of each row's neighbours nn [M, >= k] set to zero.
torch::Tensor without_aggregated(const torch::Tensor& rows, const torch::Tensor& nn, int64_t k,
                                 const torch::Tensor& count) {
  const auto cols = nn.narrow(1, 0, k).to(torch::kInt64);
  const auto folded = torch::arange(k, count.options()).view({1, k}) < count.view({-1, 1});
  return rows.scatter(1, cols, rows.gather(1, cols).masked_fill(folded, 0.0));
}
}  // namespace

RelaxedMasses relaxed_masses(const torch::Tensor& p, const torch::Tensor& x, const torch::Tensor& nn, int64_t k,
                             const torch::Tensor& budget) {
  const auto pd = f64(p);
  const auto px = pd.gather(1, x.view({-1, 1})).squeeze(1);
  // Neighbour masses are non-negative, so the running sums rise and "the largest prefix within the budget"
  // (LANTERN stops at the first neighbour that would exceed it) is the count of sums within it.
  const auto sums = pd.gather(1, nn.narrow(1, 0, k).to(torch::kInt64)).cumsum(1);  // [M, k]
  const auto count = (sums <= budget.view({-1, 1})).sum(1);                        // [M] int64
  const auto spent =
      torch::where(count > 0, sums.gather(1, (count - 1).clamp_min(0).view({-1, 1})).squeeze(1), torch::zeros_like(px));
  return {px + spent, count};
}

GroupMasses group_masses(const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& x,
                         const AcceptanceParams& a, const torch::Tensor& embeddings) {
  const int64_t M = p.size(0), V = p.size(1);
  const auto pd = f64(p), qd = f64(q);
  const auto xi = x.to(torch::kInt64).view({M, 1});
  const auto px = pd.gather(1, xi).squeeze(1), qx = f64(q).gather(1, xi).squeeze(1);
  const int64_t below = std::min(a.group / 2, V - 1), above = std::min((a.group - 1) / 2, V - 1);
  if (below == 0) return {px, qx};  // (above <= below)
  // The order as one int64 key per token: a non-negative float's bit pattern rises with it (abs() turns a -0.0
  // into 0.0), and the token id below it breaks ties, so that every device picks the same neighbours.
  const auto bits = p.to(torch::kFloat32).abs().contiguous().view(torch::kInt32).to(torch::kInt64);
  const auto key = bits * V + torch::arange(V, xi.options()).view({1, V});
  const auto key_x = key.gather(1, xi);
  constexpr int64_t kFar = std::numeric_limits<int64_t>::max();
  std::vector<torch::Tensor> picked, valid;
  for (const auto& [gap, count] : {std::pair{key - key_x, above}, std::pair{key_x - key, below}}) {
    if (count == 0) continue;
    const auto [value, index] = torch::where(gap > 0, gap, kFar).topk(count, 1, /*largest=*/false);
    picked.push_back(index);
    valid.push_back(value < kFar);  // fewer tokens on that side than asked
  }
  const auto candidates = torch::cat(picked, 1);  // [M, C]
  const auto p_c = pd.gather(1, candidates);
  auto keep = torch::cat(valid, 1).logical_and((p_c - px.view({M, 1})).abs() < a.gap);
  if (embeddings.defined() && a.distance > 0) {
    const auto e_x = embeddings.index_select(0, xi.view(-1)).unsqueeze(1);  // [M, 1, D]
    const auto e_c = embeddings.index_select(0, candidates.reshape(-1)).view({M, candidates.size(1), -1});
    keep = keep.logical_and((e_c - e_x).pow(2).sum(-1) < a.distance);
  }
  const auto kept = keep.to(torch::kFloat64);
  return {px + (p_c * kept).sum(1), qx + (qd.gather(1, candidates) * kept).sum(1)};
}

torch::Tensor residuals(const torch::Tensor& p, const torch::Tensor& q) {
  const auto pd = f64(p);
  const auto r = (pd - f64(q)).clamp_min(0);
  const auto total = r.sum(-1, true);
  return torch::where(total > 0, r / total, pd / pd.sum(-1, true));
}

namespace {
// G* = norm(max(0, p - min(q, w p))) per row, w [M].
torch::Tensor optimal_residuals(const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& w) {
  const auto pd = f64(p);
  const auto r = (pd - torch::minimum(f64(q), w.view({-1, 1}) * pd)).clamp_min(0);
  const auto total = r.sum(-1, true);
  return torch::where(total > 0, r / total, pd / pd.sum(-1, true));
}
}  // namespace

torch::Tensor accept_probabilities(const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& x,
                                   const torch::Tensor& depth, int64_t length, const AcceptanceParams& a,
                                   const torch::Tensor& nn, const torch::Tensor& embeddings) {
  const auto xi = x.to(torch::kInt64).view({-1, 1});
  auto qx = f64(q).gather(1, xi).squeeze(1);
  torch::Tensor px;
  switch (a.rule) {
    case AcceptRule::kExact: px = f64(p).gather(1, xi).squeeze(1); break;
    case AcceptRule::kLantern:
    case AcceptRule::kLanternPlusPlus: px = relaxed_for_rule(p, x.to(torch::kInt64), a, nn).p_tilde; break;
    case AcceptRule::kCoolSd: px = f64(p).gather(1, xi).squeeze(1) * cool_weights_at(a, length, depth); break;
    case AcceptRule::kGsd: {  // the group's masses in place of x's
      const auto g = group_masses(p, q, x, a, embeddings);
      px = g.p_group, qx = g.q_group;
      break;
    }
  }
  // q(x) = 0: a draft q never proposes x; only reachable through rounding.
  return torch::where(qx > 0, (px / qx).clamp_max(1.0), (px > 0).to(torch::kFloat64));
}

torch::Tensor rejection_distributions(const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& x,
                                      const torch::Tensor& depth, int64_t length, const AcceptanceParams& a,
                                      const torch::Tensor& nn) {
  switch (a.rule) {
    case AcceptRule::kExact:
    case AcceptRule::kGsd: return residuals(p, q);
    case AcceptRule::kCoolSd: return optimal_residuals(p, q, cool_weights_at(a, length, depth));
    case AcceptRule::kLantern: {
      // G* for a rule that accepts at least as often as exact SD is the plain residual (Cool-SD Prop. 1).
      if (a.optimal_resampling) return residuals(p, q);
      // LANTERN: x and the neighbours folded into it leave the target, then the host's residual.
      const auto xi = x.to(torch::kInt64).view({-1, 1});
      const auto m = relaxed_for_rule(p, xi.view(-1), a, nn);
      auto kept = without_aggregated(f64(p).scatter(1, xi, 0.0), nn, a.k, m.aggregated);
      const auto total = kept.sum(-1, true);
      return torch::where(total > 0, residuals(kept / total.clamp_min(1e-300), q), residuals(p, q));
    }
    case AcceptRule::kLanternPlusPlus: {
      if (a.optimal_resampling) return residuals(p, q);
      // LANTERN++ (as in its authors' LlamaGen code): the aggregated neighbours keep their whole target
      // mass, norm(max(0, p - q')) with q' = q zeroed on them. The code zeroes all k + 1 nearest whenever any
      // was aggregated; ours only those aggregated (as for LANTERN), so lambda = 1 is the exact residual.
      const auto m = relaxed_for_rule(p, x.to(torch::kInt64), a, nn);
      return residuals(p, without_aggregated(f64(q), nn, a.k, m.aggregated));
    }
  }
  return residuals(p, q);
}

torch::Tensor greedy_accept_probabilities(const torch::Tensor& match, const torch::Tensor& depth, int64_t length,
                                          const AcceptanceParams& a) {
  auto prob = match.to(torch::kFloat64);
  if (a.rule == AcceptRule::kCoolSd) prob = prob * cool_weights_at(a, length, depth).clamp_max(1.0);
  return prob;
}

namespace {
// One row's view of the batched rules: [1, V] rows, the neighbour list as a [1, k] tensor over the caller's
// memory (k = 0 columns when there is none).
torch::Tensor one(const torch::Tensor& t) { return t.reshape({1, -1}); }
torch::Tensor neighbour_row(const int32_t* neighbours, int64_t k) {
  if (!neighbours) return torch::zeros({1, 0}, torch::kInt64);
  return torch::from_blob(const_cast<int32_t*>(neighbours), {1, k}, torch::kInt32).to(torch::kInt64);
}
torch::Tensor scalar(int64_t v) { return torch::full({1}, v, torch::kInt64); }
}  // namespace

RelaxedMass lantern_mass(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double delta) {
  const auto m = relaxed_masses(one(p.cpu()), scalar(x), neighbour_row(neighbours, k), k,
                                torch::full({1}, delta, torch::kFloat64));
  return {m.p_tilde.item<double>(), m.aggregated.item<int64_t>()};
}

RelaxedMass lanternpp_mass(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double lambda) {
  const double px = p[x].item<double>();
  const auto m = relaxed_masses(one(p.cpu()), scalar(x), neighbour_row(neighbours, k), k,
                                torch::full({1}, (lambda - 1.0) * px, torch::kFloat64));
  return {m.p_tilde.item<double>(), m.aggregated.item<int64_t>()};
}

std::vector<double> cool_weights(const AcceptanceParams& a, int64_t length) {
  std::vector<double> w(size_t(length), a.budget);
  if (a.schedule == CoolSchedule::kExponential) {
    double mu = a.mu;
    if (std::isnan(mu)) {  // mean of w equals the budget c
      double mean = 0;
      for (int64_t i = 1; i <= length; ++i) mean += std::exp(-a.nu * double(i));
      mu = std::log(mean / double(length));
    }
    for (int64_t i = 1; i <= length; ++i) w[size_t(i - 1)] = a.budget * std::exp(-a.nu * double(i) - mu);
  } else if (a.schedule == CoolSchedule::kLinear) {
    for (int64_t i = 1; i <= length; ++i)
      w[size_t(i - 1)] = std::max(0.0, a.budget * (1.0 + a.slope * (double(length + 1) / 2.0 - double(i))));
  }
  return w;
}

torch::Tensor residual(const torch::Tensor& p, const torch::Tensor& q) { return residuals(one(p), one(q)).view(-1); }

torch::Tensor optimal_residual(const torch::Tensor& p, const torch::Tensor& q, double w) {
  return optimal_residuals(one(p), one(q), torch::full({1}, w, torch::kFloat64).to(p.device())).view(-1);
}

double acceptance_probability(const torch::Tensor& p, const torch::Tensor& q, int64_t x, int64_t depth, int64_t length,
                              const AcceptanceParams& a, const int32_t* neighbours) {
  return accept_probabilities(one(p.cpu()), one(q.cpu()), scalar(x), scalar(depth), length, a,
                              neighbour_row(neighbours, a.k))
      .item<double>();
}

torch::Tensor rejection_distribution(const torch::Tensor& p, const torch::Tensor& q, int64_t x, int64_t depth,
                                     int64_t length, const AcceptanceParams& a, const int32_t* neighbours) {
  return rejection_distributions(one(p.cpu()), one(q.cpu()), scalar(x), scalar(depth), length, a,
                                 neighbour_row(neighbours, a.k))
      .view(-1);
}

}  // namespace vispec
