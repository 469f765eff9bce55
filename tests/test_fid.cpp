// The Fréchet distance against cases with known answers: a set against itself is 0; a mean shift by c in
// every one of F dimensions adds exactly F c^2; scaling a set by s gives (1 - s)^2 tr(S).
#include <gtest/gtest.h>

#include "eval/fid.h"

namespace vispec {

namespace {
torch::Tensor correlated_features(int64_t n, int64_t f, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto z = torch::randn({n, f}, gen, torch::kFloat64);
  auto mix = torch::randn({f, f}, gen, torch::kFloat64) / std::sqrt(double(f));
  return z.matmul(mix) + 0.5;  // non-diagonal covariance, non-zero mean
}
}  // namespace

TEST(Fid, SelfDistanceIsZero) {
  const auto s = feature_stats(correlated_features(2000, 16, 1));
  EXPECT_NEAR(frechet_distance(s, s), 0.0, 1e-8);
}

TEST(Fid, MeanShiftAddsSquaredNorm) {
  const auto x = correlated_features(2000, 16, 2);
  const auto a = feature_stats(x);
  for (double c : {0.1, 1.0, 3.0}) {
    const auto b = feature_stats(x + c);
    EXPECT_NEAR(frechet_distance(a, b), 16 * c * c, 1e-6 * (1 + 16 * c * c)) << "shift " << c;
  }
}

TEST(Fid, ScalingGivesCovarianceTerm) {
  const auto x = correlated_features(2000, 8, 3);
  const auto a = feature_stats(x);
  const double trace = a.cov.trace().item<double>();
  for (double s : {0.5, 2.0}) {
    const auto b = feature_stats((x - a.mean) * s + a.mean);  // same mean, covariance s^2 S
    EXPECT_NEAR(frechet_distance(a, b), (1 - s) * (1 - s) * trace, 1e-6 * trace) << "scale " << s;
  }
}

TEST(Fid, GrowsWithShiftAndIsSymmetric) {
  const auto a = feature_stats(correlated_features(1000, 12, 4));
  const auto x = correlated_features(1000, 12, 5);  // an independent draw of the same distribution
  double previous = -1;
  for (double c : {0.0, 0.2, 0.5, 1.0}) {
    const auto b = feature_stats(x + c);
    const double d = frechet_distance(a, b);
    EXPECT_GT(d, previous) << "shift " << c;
    EXPECT_NEAR(d, frechet_distance(b, a), 1e-6 * (1 + d));
    previous = d;
  }
}

}  // namespace vispec
