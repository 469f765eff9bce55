#include "decoding/acceptance.h"

#include <cmath>

#include "core/check.h"

namespace vispec {

AcceptRule parse_accept_rule(const std::string& name) {
  if (name == "exact") return AcceptRule::kExact;
  if (name == "lantern") return AcceptRule::kLantern;
  if (name == "lanternpp") return AcceptRule::kLanternPlusPlus;
  if (name == "coolsd") return AcceptRule::kCoolSd;
  VISPEC_FAIL("unknown acceptance rule '", name, "' (known: exact, lantern, lanternpp, coolsd)");
}

CoolSchedule parse_cool_schedule(const std::string& name) {
  if (name == "uniform") return CoolSchedule::kUniform;
  if (name == "exponential") return CoolSchedule::kExponential;
  if (name == "linear") return CoolSchedule::kLinear;
  VISPEC_FAIL("unknown Cool-SD schedule '", name, "' (known: uniform, exponential, linear)");
}

namespace {
// Largest prefix of x's neighbours whose summed mass stays within `budget` (prefix in proximity order:
// LANTERN stops at the first neighbour that would exceed it; nothing is skipped).
RelaxedMass aggregate(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double budget) {
  const auto pd = p.to(torch::kCPU, torch::kFloat64).contiguous();
  const double* pp = pd.data_ptr<double>();
  RelaxedMass r{pp[x], 0};
  double s = 0;
  for (int64_t j = 0; j < k; ++j) {
    const double next = s + pp[neighbours[j]];
    if (next > budget) break;
    s = next;
    r.aggregated = j + 1;
  }
  r.p_tilde += s;
  return r;
}
}  // namespace

RelaxedMass lantern_mass(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double delta) {
  return aggregate(p, x, neighbours, k, delta);
}

RelaxedMass lanternpp_mass(const torch::Tensor& p, int64_t x, const int32_t* neighbours, int64_t k, double lambda) {
  const double px = p[x].item<double>();
  return aggregate(p, x, neighbours, k, (lambda - 1.0) * px);
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

torch::Tensor residual(const torch::Tensor& p, const torch::Tensor& q) {
  auto r = (p - q).clamp_min(0);
  const double total = r.sum().item<double>();
  return total > 0 ? r / total : p / p.sum();
}

torch::Tensor optimal_residual(const torch::Tensor& p, const torch::Tensor& q, double w) {
  auto r = (p - torch::minimum(q, w * p)).clamp_min(0);
  const double total = r.sum().item<double>();
  return total > 0 ? r / total : p / p.sum();
}

double acceptance_probability(const torch::Tensor& p, const torch::Tensor& q, int64_t x, int64_t depth,
                              int64_t length, const AcceptanceParams& a, const int32_t* neighbours) {
  const double qx = q[x].item<double>();
  double px = p[x].item<double>();
  switch (a.rule) {
    case AcceptRule::kExact: break;
    case AcceptRule::kLantern: px = lantern_mass(p, x, neighbours, a.k, a.delta).p_tilde; break;
    case AcceptRule::kLanternPlusPlus: px = lanternpp_mass(p, x, neighbours, a.k, a.lambda).p_tilde; break;
    case AcceptRule::kCoolSd: px *= cool_weights(a, length)[size_t(depth - 1)]; break;
  }
  if (qx <= 0) return px > 0 ? 1.0 : 0.0;  // a draft q never proposes; only reachable through rounding
  return std::min(1.0, px / qx);
}

torch::Tensor rejection_distribution(const torch::Tensor& p, const torch::Tensor& q, int64_t x, int64_t depth,
                                     int64_t length, const AcceptanceParams& a, const int32_t* neighbours) {
  switch (a.rule) {
    case AcceptRule::kExact: return residual(p, q);
    case AcceptRule::kCoolSd: return optimal_residual(p, q, cool_weights(a, length)[size_t(depth - 1)]);
    case AcceptRule::kLantern: {
      // G* for a rule that accepts at least as often as exact SD is the plain residual (Cool-SD Prop. 1).
      if (a.optimal_resampling) return residual(p, q);
      // LANTERN: x and the neighbours folded into it leave the target, then the host's residual.
      const auto m = lantern_mass(p, x, neighbours, a.k, a.delta);
      auto kept = p.clone();
      kept[x] = 0;
      for (int64_t j = 0; j < m.aggregated; ++j) kept[neighbours[j]] = 0;
      if (kept.sum().item<double>() <= 0) return residual(p, q);
      return residual(kept / kept.sum(), q);
    }
    case AcceptRule::kLanternPlusPlus: {
      if (a.optimal_resampling) return residual(p, q);
      // LANTERN++ (as in its authors' LlamaGen code): the aggregated neighbours keep their whole target
      // mass, norm(max(0, p - q')) with q' = q zeroed on them. The code zeroes all k + 1 nearest whenever any
      // was aggregated; ours only those aggregated (as for LANTERN), so lambda = 1 is the exact residual.
      const auto m = lanternpp_mass(p, x, neighbours, a.k, a.lambda);
      auto q_kept = q.clone();
      for (int64_t j = 0; j < m.aggregated; ++j) q_kept[neighbours[j]] = 0;
      return residual(p, q_kept);
    }
  }
  return residual(p, q);
}

}  // namespace vispec
