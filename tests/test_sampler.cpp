// The sampling chain and the counter-based RNG.
#include <gtest/gtest.h>

#include "core/rng.h"
#include "kernels/keyed_uniforms.h"
#include "decoding/common/sampler.h"

namespace vispec {

namespace {
std::vector<bool> kept(const torch::Tensor& logits) {
  std::vector<bool> out;
  for (int64_t i = 0; i < logits.size(-1); ++i) out.push_back(!std::isinf(logits[0][i].item<float>()));
  return out;
}
}  // namespace

TEST(Sampler, CfgIsUncondPlusScaleTimesDifference) {
  auto cond = torch::tensor({1.f, 2.f, 3.f, -1.f, 0.f, 4.f}).view({2, 3});
  auto uncond = torch::tensor({0.f, 2.f, 1.f, 1.f, 1.f, 1.f}).view({2, 3});
  auto out = cfg_combine(torch::cat({cond, uncond}), 2.0);
  auto expect = torch::tensor({2.f, 2.f, 5.f, -3.f, -1.f, 7.f}).view({2, 3});
  EXPECT_TRUE(torch::allclose(out, expect)) << out;
}

TEST(Sampler, TopKKeepsTheKLargestAndTies) {
  auto l = torch::tensor({1.f, 5.f, 3.f, 5.f, 2.f}).view({1, 5});
  EXPECT_EQ(kept(apply_top_k(l, 2)), (std::vector<bool>{false, true, false, true, false}));
  EXPECT_EQ(kept(apply_top_k(l, 3)), (std::vector<bool>{false, true, true, true, false}));
  EXPECT_EQ(kept(apply_top_k(l, 1)), (std::vector<bool>{false, true, false, true, false}));  // tie at the k-th
  EXPECT_EQ(kept(apply_top_k(l, 0)), (std::vector<bool>(5, true)));
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  auto l = torch::log(torch::tensor({0.3f, 0.05f, 0.5f, 0.15f})).view({1, 4});
  EXPECT_EQ(kept(apply_top_p(l, 0.7)), (std::vector<bool>{true, false, true, false}));    // 0.5 + 0.3 >= 0.7
  EXPECT_EQ(kept(apply_top_p(l, 0.45)), (std::vector<bool>{false, false, true, false}));  // 0.5 alone
  EXPECT_EQ(kept(apply_top_p(l, 0.81)), (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(kept(apply_top_p(l, 0.01)), (std::vector<bool>{false, false, true, false}));  // at least one
}

TEST(Sampler, GreedyIsOneHotAtArgmax) {
  SamplingParams p;
  p.temperature = 0;
  auto probs = target_probs(torch::tensor({0.1f, 3.f, -2.f, 2.9f}).view({1, 4}), p);
  EXPECT_TRUE(torch::equal(probs, torch::tensor({0.f, 1.f, 0.f, 0.f}).view({1, 4})));
}

TEST(Sampler, InverseCdfPicksTheRightToken) {
  auto probs = torch::tensor({0.2f, 0.3f, 0.5f}).view({1, 3}).expand({5, 3});
  auto u = torch::tensor({0.1, 0.21, 0.49, 0.51, 0.999}, torch::kFloat64);
  auto t = sample_from_probs(probs, u);
  EXPECT_TRUE(torch::equal(t, torch::tensor({0, 1, 1, 2, 2}, torch::kInt64))) << t;
  // Zero-probability tokens are never drawn, at either end of the range.
  auto z = torch::tensor({0.f, 1.f, 0.f}).view({1, 3}).expand({3, 3});
  EXPECT_TRUE(torch::equal(sample_from_probs(z, torch::tensor({0.0, 0.5, 0.9999999}, torch::kFloat64)),
                           torch::tensor({1, 1, 1}, torch::kInt64)));
}

TEST(Sampler, DrawsFollowTheDistribution) {
  // 40000 draws keyed by sample id; chi-square with 3 degrees of freedom, p = 0.001 critical value 16.27.
  auto probs = torch::tensor({0.1f, 0.2f, 0.3f, 0.4f}).view({1, 4});
  const int64_t n = 40000;
  std::vector<uint64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = uint64_t(i);
  auto t = sample_from_probs(probs.expand({n, 4}), uniforms(42, ids, 7, Purpose::kSample));
  auto counts = torch::bincount(t, {}, 4).to(torch::kFloat64);
  auto expect = probs[0].to(torch::kFloat64) * double(n);
  const double chi2 = ((counts - expect).pow(2) / expect).sum().item<double>();
  std::printf("chi-square over 4 tokens: %.3f (critical 16.27)\n", chi2);
  EXPECT_LT(chi2, 16.27);
}

TEST(Rng, IsAPureFunctionOfItsKey) {
  const RngKey k{123, 45};
  EXPECT_EQ(uniform(k, 3, Purpose::kSample), uniform(k, 3, Purpose::kSample));
  EXPECT_NE(uniform(k, 3, Purpose::kSample), uniform(k, 4, Purpose::kSample));
  EXPECT_NE(uniform(k, 3, Purpose::kSample), uniform(k, 3, Purpose::kAccept));
  EXPECT_NE(uniform(k, 3, Purpose::kSample), uniform(RngKey{124, 45}, 3, Purpose::kSample));
  EXPECT_NE(uniform(k, 3, Purpose::kSample), uniform(RngKey{123, 46}, 3, Purpose::kSample));
  EXPECT_NE(uniform(k, 3, Purpose::kSample, 0), uniform(k, 3, Purpose::kSample, 1));
  // The batch helper gives each sample its own value, whatever the batch around it.
  auto a = uniforms(9, {5, 6, 7}, 0, Purpose::kSample);
  auto b = uniforms(9, {7}, 0, Purpose::kSample);
  EXPECT_EQ(a[2].item<double>(), b[0].item<double>());
  double lo = 1, hi = 0, sum = 0;
  for (uint32_t i = 0; i < 100000; ++i) {
    const double x = uniform(RngKey{1, 2}, i, Purpose::kDraft);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
}

// The tensor Philox (what a GPU decode loop draws with) gives the host generator's numbers bit for bit, for
// sample ids and seeds beyond 32 bits, every purpose and draw indices up to the 24 bits the counter keeps.
TEST(Rng, TensorGeneratorEqualsTheHostOne) {
  const std::vector<int64_t> ids = {0, 1, 7, 123456789, (int64_t(1) << 40) + 5, (int64_t(1) << 62) + 99};
  const int64_t B = int64_t(ids.size()), C = 9;
  auto positions = torch::randint(0, 1 << 20, {B, C}, torch::kInt64);
  positions[0][0] = 0;
  positions[1][1] = int64_t(0xFFFFFFFFu);
  auto draws = torch::randint(0, 1 << 24, {B, C}, torch::kInt64);
  const auto id_tensor = torch::tensor(ids, torch::kInt64);
  for (uint64_t seed : {uint64_t(0), uint64_t(99), (uint64_t(1) << 63) + 12345}) {
    for (Purpose purpose : {Purpose::kSample, Purpose::kAccept, Purpose::kTrain}) {
      const auto host = uniforms_at(seed, id_tensor, positions, purpose, draws);
      const auto tensor = philox_uniforms(seed, id_tensor, positions, purpose, draws);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c)
          ASSERT_EQ(host[b][c].item<double>(),
                    uniform(RngKey{seed, uint64_t(ids[size_t(b)])}, uint32_t(positions[b][c].item<int64_t>()), purpose,
                            uint32_t(draws[b][c].item<int64_t>())));
      EXPECT_TRUE(torch::equal(host, tensor)) << "seed " << seed << " purpose " << uint32_t(purpose);
      // Without draws: draw 0.
      EXPECT_TRUE(torch::equal(philox_uniforms(seed, id_tensor, positions, purpose, torch::Tensor()),
                               uniforms_at(seed, id_tensor, positions, purpose, torch::zeros_like(draws))));
    }
  }
}

}  // namespace vispec
