// Fréchet distance between Gaussians fitted to two feature sets (FID when the features are a classifier's):
//   d^2 = |mu1 - mu2|^2 + tr(S1 + S2 - 2 (S1 S2)^{1/2})
// computed in float64. tr((S1 S2)^{1/2}) = tr((S1^{1/2} S2 S1^{1/2})^{1/2}): the inner matrix is symmetric
// positive semi-definite, so its square root comes from one eigendecomposition, with tiny negative
// eigenvalues (round-off) clamped to zero; no complex arithmetic as in scipy's sqrtm.
#pragma once

#include <torch/torch.h>

namespace vispec {

struct FeatureStats {
  torch::Tensor mean;  // [F] float64
  torch::Tensor cov;   // [F, F] float64, unbiased (divides by n - 1, as numpy.cov)
  int64_t count = 0;
};

FeatureStats feature_stats(const torch::Tensor& features);  // features [N, F], N >= 2
double frechet_distance(const FeatureStats& a, const FeatureStats& b);

}  // namespace vispec
