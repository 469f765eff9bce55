// The acceptance rules (decoding/common/acceptance.h) against their stated bounds and hand-computed values, and the
// codebook neighbour table against brute force. Pure functions: no model is involved.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <random>

#include "decoding/common/acceptance.h"
#include "decoding/common/codebook_neighbours.h"
#include "io/npy.h"

namespace vispec {

namespace {
torch::Tensor random_distribution(int64_t V, double sharpness, torch::Generator& gen) {
  return torch::softmax(torch::randn({V}, gen, torch::kFloat64) * sharpness, 0);
}

// A random ordering of the codes other than x (stands in for a neighbour table row).
std::vector<int32_t> other_codes(int64_t V, int64_t x, std::mt19937& rng) {
  std::vector<int32_t> v;
  for (int64_t c = 0; c < V; ++c)
    if (c != x) v.push_back(int32_t(c));
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// The distribution LANTERN's relaxed target p~ stands for: the aggregated neighbours' mass moved onto x.
torch::Tensor relaxed_target(const torch::Tensor& p, int64_t x, const std::vector<int32_t>& nn, int64_t aggregated) {
  auto t = p.clone();
  for (int64_t j = 0; j < aggregated; ++j) {
    t[x] += p[nn[size_t(j)]];
    t[nn[size_t(j)]] = 0;
  }
  return t;
}

// One step of "draft x ~ q, accept with a(x), else sample the rejection distribution", exactly.
torch::Tensor output_distribution(const torch::Tensor& p, const torch::Tensor& q, const AcceptanceParams& a) {
  const int64_t V = p.size(0);
  auto out = torch::zeros_like(p);
  for (int64_t x = 0; x < V; ++x) {
    const double qa = q[x].item<double>() * acceptance_probability(p, q, x, 1, 1, a, nullptr);
    out[x] += qa;
    out += (q[x].item<double>() - qa) * rejection_distribution(p, q, x, 1, 1, a, nullptr);
  }
  return out;
}
}  // namespace

TEST(Acceptance, LanternRelaxationStaysWithinItsTvdBudgetAndIsMaximal) {
  auto gen = at::detail::createCPUGenerator(1);
  std::mt19937 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t V = 64, x = trial % V, k = 1 + trial % 40;
    const double delta = std::vector<double>{0.01, 0.1, 0.4}[size_t(trial % 3)];
    const auto p = random_distribution(V, 1.0 + trial % 4, gen);
    const auto nn = other_codes(V, x, rng);
    const auto m = lantern_mass(p, x, nn.data(), k, delta);
    const auto relaxed = relaxed_target(p, x, nn, m.aggregated);
    const double tvd = 0.5 * (p - relaxed).abs().sum().item<double>();
    EXPECT_LE(tvd, delta + 1e-12);
    EXPECT_NEAR(m.p_tilde, relaxed[x].item<double>(), 1e-12);
    EXPECT_NEAR(m.p_tilde - p[x].item<double>(), tvd, 1e-12);  // TVD(p, p~) = s_m
    EXPECT_LE(m.aggregated, k);
    if (m.aggregated < k)  // the next neighbour would have broken the budget
      EXPECT_GT(m.p_tilde - p[x].item<double>() + p[nn[size_t(m.aggregated)]].item<double>(), delta);
  }
}

TEST(Acceptance, LanternPlusPlusStaysWithinItsMultiplicativeBudget) {
  auto gen = at::detail::createCPUGenerator(2);
  std::mt19937 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t V = 64, x = (7 * trial) % V, k = 1 + trial % 12;
    const double lambda = std::vector<double>{3, 5, 10}[size_t(trial % 3)];
    const auto p = random_distribution(V, 0.5 + trial % 3, gen);
    const auto nn = other_codes(V, x, rng);
    const auto m = lanternpp_mass(p, x, nn.data(), k, lambda);
    const double px = p[x].item<double>();
    EXPECT_GE(m.p_tilde, px);
    EXPECT_LE(m.p_tilde, lambda * px * (1 + 1e-12));
  }
}

TEST(Acceptance, CoolSdSchedulesEqualHandComputedVectors) {
  AcceptanceParams a;
  a.rule = AcceptRule::kCoolSd;
  a.budget = 1.0;
  a.schedule = CoolSchedule::kExponential;  // w_i = c exp(-0.7 i - mu), mean c
  const std::vector<double> expected = {2.595, 1.289, 0.640, 0.318, 0.158};
  auto w = cool_weights(a, 5);
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(w[i], expected[i], 1e-3) << i;
  EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0) / 5, 1.0, 1e-12);
  for (size_t i = 1; i < 5; ++i) EXPECT_NEAR(w[i] / w[i - 1], std::exp(-0.7), 1e-12);
  a.mu = 0;  // an explicit normaliser is used as given
  EXPECT_NEAR(cool_weights(a, 3)[0], std::exp(-0.7), 1e-12);
  a.mu = std::numeric_limits<double>::quiet_NaN();
  a.schedule = CoolSchedule::kLinear;
  a.budget = 2.0;
  a.slope = 0.1;
  EXPECT_EQ(cool_weights(a, 5), (std::vector<double>{2.4, 2.2, 2.0, 1.8, 1.6}));
  a.schedule = CoolSchedule::kUniform;
  EXPECT_EQ(cool_weights(a, 4), (std::vector<double>(4, 2.0)));
}

TEST(Acceptance, OptimalResamplingEqualsHandComputedVectorAndTheResidualForWAtLeastOne) {
  const auto p = torch::tensor({0.5, 0.3, 0.2}, torch::kFloat64), q = torch::tensor({0.2, 0.5, 0.3}, torch::kFloat64);
  // w = 0.5: min(q, w p) = [0.2, 0.15, 0.1]; p - that = [0.3, 0.15, 0.1]; normalised by 0.55.
  const auto g = optimal_residual(p, q, 0.5);
  const auto expected = torch::tensor({0.3 / 0.55, 0.15 / 0.55, 0.1 / 0.55}, torch::kFloat64);
  EXPECT_TRUE(torch::allclose(g, expected, 0, 1e-12)) << g;
  EXPECT_TRUE(torch::allclose(residual(p, q), torch::tensor({1.0, 0.0, 0.0}, torch::kFloat64)));
  auto gen = at::detail::createCPUGenerator(3);
  for (int trial = 0; trial < 50; ++trial) {
    const auto pr = random_distribution(32, 2, gen), qr = random_distribution(32, 2, gen);
    for (double w : {1.0, 1.1, 2.0, 10.0})
      EXPECT_TRUE(torch::allclose(optimal_residual(pr, qr, w), residual(pr, qr), 0, 1e-12)) << w;
    EXPECT_FALSE(torch::allclose(optimal_residual(pr, qr, 0.5), residual(pr, qr), 0, 1e-6));
  }
}

TEST(Acceptance, ExactRuleReproducesTheTargetAndCoolSdBiasGrowsWithItsWeight) {
  auto gen = at::detail::createCPUGenerator(4);
  AcceptanceParams exact, cool;
  cool.rule = AcceptRule::kCoolSd;
  cool.schedule = CoolSchedule::kUniform;
  for (int trial = 0; trial < 20; ++trial) {
    const auto p = random_distribution(16, 2, gen), q = random_distribution(16, 2, gen);
    EXPECT_TRUE(torch::allclose(output_distribution(p, q, exact), p, 0, 1e-12));
    double previous = 0;
    for (double w : {1.0, 1.5, 3.0}) {
      cool.budget = w;
      const double tvd = 0.5 * (output_distribution(p, q, cool) - p).abs().sum().item<double>();
      if (w == 1.0) EXPECT_LT(tvd, 1e-12);
      EXPECT_GE(tvd, previous - 1e-12);
      previous = tvd;
    }
  }
}

// LANTERN++'s resampling by hand: p = [.3 .1 .2 .4], q = [.1 .5 .3 .1], x = 0, neighbours of 0 = (2, 3, 1).
// lambda 2: budget .3 takes code 2 (.2), not then code 3 (.6 > .3): q' = [.1 .5 0 .1],
// max(0, p - q') = [.2 0 .2 .3] -> /.7; optimal resampling: max(0, p - q) = [.2 0 0 .3] -> /.5; lambda 1
// aggregates nothing and is the exact residual.
TEST(Acceptance, LanternPlusPlusResamplingEqualsHandComputedVectors) {
  const auto p = torch::tensor({0.3, 0.1, 0.2, 0.4}, torch::kFloat64);
  const auto q = torch::tensor({0.1, 0.5, 0.3, 0.1}, torch::kFloat64);
  const std::vector<int32_t> nn{2, 3, 1};
  AcceptanceParams a;
  a.rule = AcceptRule::kLanternPlusPlus;
  a.k = 3;
  a.lambda = 2;
  EXPECT_NEAR(acceptance_probability(p, q, 0, 1, 1, a, nn.data()), 1.0, 1e-12);  // p~ = .5 >= q = .1
  auto expect = torch::tensor({0.2, 0.0, 0.2, 0.3}, torch::kFloat64) / 0.7;
  EXPECT_TRUE(torch::allclose(rejection_distribution(p, q, 0, 1, 1, a, nn.data()), expect, 0, 1e-12));
  a.optimal_resampling = true;
  expect = torch::tensor({0.2, 0.0, 0.0, 0.3}, torch::kFloat64) / 0.5;
  EXPECT_TRUE(torch::allclose(rejection_distribution(p, q, 0, 1, 1, a, nn.data()), expect, 0, 1e-12));
  a.optimal_resampling = false;
  a.lambda = 1;
  EXPECT_TRUE(torch::allclose(rejection_distribution(p, q, 0, 1, 1, a, nn.data()), residual(p, q), 0, 1e-12));
}

TEST(Acceptance, GreedyOneHotDistributionsAcceptExactlyTheArgmax) {
  AcceptanceParams a;
  const auto p = torch::tensor({0.0, 1.0, 0.0}, torch::kFloat64);
  EXPECT_EQ(acceptance_probability(p, torch::tensor({0.0, 1.0, 0.0}, torch::kFloat64), 1, 1, 1, a, nullptr), 1.0);
  EXPECT_EQ(acceptance_probability(p, torch::tensor({1.0, 0.0, 0.0}, torch::kFloat64), 0, 1, 1, a, nullptr), 0.0);
  EXPECT_TRUE(
      torch::equal(rejection_distribution(p, torch::tensor({1.0, 0.0, 0.0}, torch::kFloat64), 0, 1, 1, a, nullptr), p));
}

TEST(CodebookNeighbours, TableEqualsBruteForceAndIsCached) {
  auto gen = at::detail::createCPUGenerator(5);
  const auto codebook = torch::randn({40, 8}, gen);
  const auto t = CodebookNeighbours::build(codebook, 10);
  ASSERT_EQ(t.codes(), 40);
  for (int64_t c = 0; c < 40; ++c) {
    std::vector<std::pair<double, int32_t>> d;
    for (int64_t o = 0; o < 40; ++o)
      if (o != c) d.push_back({(codebook[c] - codebook[o]).to(torch::kFloat64).norm().item<double>(), int32_t(o)});
    std::sort(d.begin(), d.end());
    for (int64_t j = 0; j < 10; ++j) EXPECT_EQ(t.row(c)[j], d[size_t(j)].second) << c << "," << j;
  }
  const auto dir = std::filesystem::temp_directory_path() / ("vispec_nn_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto first = CodebookNeighbours::cached(codebook, 10, dir.string());
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_NE(entry.path().filename().string().find("-40x10.npy"), std::string::npos);
  }
  EXPECT_EQ(files, 1);
  const auto again = CodebookNeighbours::cached(codebook, 10, dir.string());  // read back from the file
  for (int64_t c = 0; c < 40; ++c) EXPECT_TRUE(std::equal(again.row(c), again.row(c) + 10, t.row(c)));
  // A cached file that is not this codebook's table (another codebook's, or damaged) is built again.
  EXPECT_EQ(t.disagrees_with(codebook), "");
  EXPECT_NE(t.disagrees_with(torch::randn({40, 8}, gen)), "");
  const auto cached_file = std::filesystem::directory_iterator(dir)->path().string();
  const auto other = CodebookNeighbours::build(torch::randn({40, 8}, gen), 10);
  std::vector<int32_t> other_table(other.row(0), other.row(0) + 400);
  write_npy_int32(cached_file, other_table, {40, 10});
  const auto rebuilt = CodebookNeighbours::cached(codebook, 10, dir.string());
  for (int64_t c = 0; c < 40; ++c) EXPECT_TRUE(std::equal(rebuilt.row(c), rebuilt.row(c) + 10, t.row(c))) << c;
  EXPECT_NE(read_npy_int32(cached_file, nullptr), other_table) << "the bad file was not replaced";
  std::filesystem::remove_all(dir);
}

}  // namespace vispec
