// SCD's couplings (decoding/common/coupling.h) on random distributions: each new draft is a sample of p whatever
// the old draft (chi-square against p), and the two drafts agree as often as the coupling promises: maximal
// coupling with probability 1 - TV(p, q), Gumbel coupling (drafts of p and q under one noise) with probability
// sum_x 1 / sum_y max(p(y) / p(x), q(y) / q(x)).
#include <gtest/gtest.h>

#include "decoding/common/coupling.h"
#include "decoding/common/sampler.h"
#include "exact_distribution.h"

namespace vispec {
namespace {

constexpr int64_t kDraws = 200000, kV = 6;

// A random distribution over kV tokens, one token of it nearly absent (a draft the target finds unlikely).
torch::Tensor random_distribution(int64_t seed) {
  torch::manual_seed(seed);
  auto p = torch::rand({kV}, torch::kFloat64) + 0.05;
  p[seed % kV] = 1e-3;
  return p / p.sum();
}

torch::Tensor counts_of(const torch::Tensor& tokens) {
  return torch::bincount(tokens.reshape(-1), {}, kV).to(torch::kFloat64);
}

// The draws' agreement rate, and how many standard errors it is from `expected`.
double z_score(double rate, double expected) {
  return (rate - expected) / std::sqrt(expected * (1 - expected) / double(kDraws));
}

}  // namespace

TEST(Coupling, MaximalKeepsTheOldDraftWithProbabilityOneMinusTvAndDrawsP) {
  const auto q = random_distribution(1), p = random_distribution(2);
  torch::manual_seed(3);
  const auto old = sample_from_probs(q.expand({kDraws, kV}), torch::rand({kDraws}, torch::kFloat64)).view({1, kDraws});
  const auto u_keep = torch::rand({1, kDraws}, torch::kFloat64), u_draw = torch::rand({1, kDraws}, torch::kFloat64);
  const auto next = maximal_coupling(old, q.expand({1, kDraws, kV}), p.expand({1, kDraws, kV}), u_keep, u_draw);
  const auto fit = test::chi_square(counts_of(next), p);
  EXPECT_LT(fit.stat, fit.critical()) << "the new draft is a sample of p";
  const double tv = 0.5 * (p - q).abs().sum().item<double>();
  const double same = next.eq(old).to(torch::kFloat64).mean().item<double>();
  EXPECT_LT(std::abs(z_score(same, 1 - tv)), 4.0) << same << " against 1 - TV " << 1 - tv;
  // Where p is q, no draft ever changes.
  const auto unchanged = maximal_coupling(old, q.expand({1, kDraws, kV}), q.expand({1, kDraws, kV}), u_keep, u_draw);
  EXPECT_TRUE(torch::equal(unchanged, old));
}

TEST(Coupling, GumbelDrawsPAndAgreesAsItsFormulaSays) {
  const auto q = random_distribution(4), p = random_distribution(5);
  torch::manual_seed(6);
  const auto noise = torch::rand({1, kDraws, kV}, torch::kFloat64);
  const auto from_q = gumbel_coupling(q.expand({1, kDraws, kV}), noise);
  const auto from_p = gumbel_coupling(p.expand({1, kDraws, kV}), noise);
  for (const auto& [drafts, dist] : {std::pair{from_q, q}, std::pair{from_p, p}}) {
    const auto fit = test::chi_square(counts_of(drafts), dist);
    EXPECT_LT(fit.stat, fit.critical()) << "a draft is a sample of its distribution";
  }
  double expected = 0;
  for (int64_t x = 0; x < kV; ++x) {
    const auto px = p[x].item<double>(), qx = q[x].item<double>();
    expected += 1.0 / torch::maximum(p / px, q / qx).sum().item<double>();
  }
  const double same = from_p.eq(from_q).to(torch::kFloat64).mean().item<double>();
  EXPECT_LT(std::abs(z_score(same, expected)), 4.0) << same << " against " << expected;
  const double tv = 0.5 * (p - q).abs().sum().item<double>();
  EXPECT_GE(expected, (1 - tv) / (1 + tv) - 1e-12);  // between the bounds SCD states
  EXPECT_LE(expected, 1 - tv + 1e-12);
}

}  // namespace vispec
