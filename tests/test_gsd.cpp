// GSD, grouped speculative decoding (decoding/gsd.cpp): its group against the rule read literally (a sort of the
// vocabulary), a group of one is SJD's exact rule and SJD's tokens, at temperature 0 it is AR, and its whole images
// stay within the distortion bound every image logs, while being measurably not the target's (it is lossy).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "decoding/ar.h"
#include "decoding/common/acceptance.h"
#include "decoding/gsd.h"
#include "decoding/sjd.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {
namespace {

AcceptanceParams gsd_rule(int64_t group, double gap, double distance) {
  AcceptanceParams a;
  a.rule = AcceptRule::kGsd;
  a.group = group;
  a.gap = gap;
  a.distance = distance;
  return a;
}

// The rule as its paper states it, one row at a time: the vocabulary sorted by p (ties by token id), the ranks
// around x's, each neighbour kept by the two filters, the masses summed.
std::pair<double, double> literal_group(const torch::Tensor& p, const torch::Tensor& q, int64_t x,
                                        const AcceptanceParams& a, const torch::Tensor& embeddings) {
  const int64_t V = p.size(0);
  std::vector<int64_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  const auto pv = p.to(torch::kFloat64);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t i, int64_t j) { return pv[i].item<double>() < pv[j].item<double>(); });
  const int64_t r = std::find(order.begin(), order.end(), x) - order.begin();
  const double px = pv[x].item<double>();
  double pg = 0, qg = 0;
  for (int64_t i = std::max<int64_t>(0, r - a.group / 2); i <= std::min(V - 1, r + (a.group - 1) / 2); ++i) {
    const int64_t y = order[size_t(i)];
    bool kept = y == x;
    if (!kept) {
      kept = std::abs(pv[y].item<double>() - px) < a.gap;
      if (a.distance > 0) kept = kept && (embeddings[y] - embeddings[x]).pow(2).sum().item<double>() < a.distance;
    }
    if (kept) pg += pv[y].item<double>(), qg += q[y].item<double>();
  }
  return {pg, qg};
}

}  // namespace

// Rows whose p has many ties and zeros (masses k / sum for small whole k), carried q (a distribution) and new
// drafts' q (one-hot); embeddings on a half-integer grid, so that every squared distance is exact in float32.
TEST(GsdRule, GroupMassesMatchTheRuleReadLiterally) {
  torch::manual_seed(11);
  const int64_t M = 24, V = 40;
  const auto weights = torch::randint(0, 6, {M, V}).to(torch::kFloat32);
  const auto p = weights / weights.sum(1, true);
  const auto x = torch::randint(0, V, {M}, torch::kInt64);
  const auto carried = torch::softmax(torch::randn({M, V}), 1);
  const auto fresh = torch::zeros({M, V}).scatter_(1, x.view({M, 1}), 1.0);
  const auto embeddings = torch::randint(0, 4, {V, 3}).to(torch::kFloat32) / 2;
  for (const auto& q : {carried, fresh})
    for (int64_t group : {1, 2, 3, 14, 25, 99})
      for (double distance : {0.0, 2.1}) {
        const auto a = gsd_rule(group, 0.08, distance);
        const auto got = group_masses(p, q, x, a, embeddings);
        for (int64_t m = 0; m < M; ++m) {
          const auto [pg, qg] = literal_group(p[m], q[m], x[m].item<int64_t>(), a, embeddings);
          EXPECT_NEAR(got.p_group[m].item<double>(), pg, 1e-12) << "group " << group << " row " << m;
          EXPECT_NEAR(got.q_group[m].item<double>(), qg, 1e-12) << "group " << group << " row " << m;
        }
      }
}

// A group of one is x alone: SJD's exact acceptance, bit for bit. Against a new draft's one-hot q every group
// accepts at least as often as the exact rule (p(G) >= p(x), q(G) = 1), and some accept more.
TEST(GsdRule, AGroupOfOneIsTheExactRuleAndGroupsOnlyRaiseANewDraftsAcceptance) {
  torch::manual_seed(12);
  const int64_t M = 64, V = 30;
  const auto p = torch::softmax(2 * torch::randn({M, V}), 1);
  const auto x = torch::randint(0, V, {M}, torch::kInt64);
  const auto depth = torch::ones({M}, torch::kInt64);
  const auto carried = torch::softmax(torch::randn({M, V}), 1);
  const auto exact = accept_probabilities(p, carried, x, depth, 1, AcceptanceParams{}, torch::Tensor());
  const auto alone = accept_probabilities(p, carried, x, depth, 1, gsd_rule(1, 0.15, 0), torch::Tensor());
  EXPECT_TRUE(torch::equal(alone, exact));
  const auto fresh = torch::zeros({M, V}).scatter_(1, x.view({M, 1}), 1.0);
  const auto exact_fresh = accept_probabilities(p, fresh, x, depth, 1, AcceptanceParams{}, torch::Tensor());
  const auto grouped = accept_probabilities(p, fresh, x, depth, 1, gsd_rule(25, 0.15, 0), torch::Tensor());
  EXPECT_TRUE((grouped >= exact_fresh).all().item<bool>());
  EXPECT_GT((grouped > exact_fresh).sum().item<int64_t>(), M / 2);
  // The rejection distribution is the ordinary residual.
  EXPECT_TRUE(torch::equal(rejection_distributions(p, carried, x, depth, 1, gsd_rule(25, 0.15, 0), torch::Tensor()),
                           residuals(p, carried)));
}

// A group of one decodes SJD's tokens (its tensor-form verification against SJD's fused walk), with a bound of 0;
// at temperature 0 the default group decodes AR's tokens.
TEST(GsdDecoder, AGroupOfOneGivesSjdsTokensAndTemperatureZeroGivesArs) {
  auto target = test::tiny_gpt(3);
  const auto r = test::requests(0, 8);
  const auto sampled = test::guided_sampling(1.0);
  SjdDecoder gsd_one(target, sampled, 15, gsd_rule(1, 0.15, 0.5));
  EXPECT_EQ(gsd_one.name(), "gsd");
  const auto one = gsd_one.decode(r);
  EXPECT_TRUE(torch::equal(one.tokens, SjdDecoder(target, sampled, 15).decode(r).tokens));
  for (const auto& s : one.stats) {
    EXPECT_EQ(s.extra.at("gsd_tv_bound"), 0.0);
    EXPECT_EQ(s.extra.at("gsd_accept_gain"), 0.0);
  }
  const auto greedy = test::guided_sampling(0);
  EXPECT_TRUE(torch::equal(SjdDecoder(target, greedy, 15, gsd_rule(25, 0.15, 0.5)).decode(r).tokens,
                           ArDecoder(target, greedy).decode(r).tokens));
}

// Whole images of a 2x2-grid model over 4 codes against the exact law of all 256 sequences. GSD moves them away
// from it (the chi-square test that SJD passes fails: the test sees the distortion), by no more in total variation
// than the mean of the bound its images logged (the coupling with SJD: the two differ only where a test's uniform
// falls between the two acceptances), plus the sampling noise of the counts, E|count/n - p| summed.
TEST(GsdDecoder, WholeImagesStayWithinTheLoggedDistortionBound) {
  const int64_t V = 4, N = 4, samples = 40000;
  const auto sampling = test::guided_sampling(1.0);
  auto target = test::tiny_sequence_gpt(7, 2, V);
  const auto exact = test::exact_sequences(target, 1, sampling, V, N);
  SjdDecoder gsd(target, sampling, 3, gsd_rule(3, 0.3, 0));
  auto counts = torch::zeros({int64_t(std::pow(V, N))}, torch::kFloat64);
  const auto digits = torch::tensor({V * V * V, V * V, V, int64_t(1)}, torch::kInt64);
  SampleStats total;
  for (int64_t start = 0; start < samples; start += 500) {
    const auto out = gsd.decode(test::requests(start, 500, 1));
    counts.index_add_(0, (out.tokens * digits).sum(1), torch::ones({out.tokens.size(0)}, torch::kFloat64));
    for (const auto& s : out.stats) total += s;
  }
  const double n = double(samples);
  const double tv = 0.5 * (counts / n - exact).abs().sum().item<double>();
  const double noise = 0.5 * (2 * exact * (1 - exact) / (M_PI * n)).sqrt().sum().item<double>();
  const double bound = total.extra.at("gsd_tv_bound") / n, gain = total.extra.at("gsd_accept_gain") / n;
  const auto chi = test::chi_square(counts, exact);
  std::cout << "GSD: TV " << tv << " (sampling noise " << noise << "), logged bound " << bound << ", acceptance gain "
            << gain << " per image, chi2 " << chi.stat << " critical " << chi.critical() << "\n";
  EXPECT_GT(chi.stat, chi.critical()) << "GSD's distortion is invisible: the test has no power";
  EXPECT_GT(gain, 0);
  EXPECT_LE(tv, bound + 2 * noise);
}

}  // namespace vispec
