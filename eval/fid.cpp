#include "eval/fid.h"

#include "core/check.h"

namespace vispec {

namespace {
torch::Tensor sqrt_psd(const torch::Tensor& m) {
  auto [values, vectors] = torch::linalg_eigh(m, "L");
  return vectors.matmul(torch::diag(values.clamp_min(0).sqrt())).matmul(vectors.transpose(0, 1));
}
}  // namespace

FeatureStats feature_stats(const torch::Tensor& features) {
  VISPEC_ASSERT(features.dim() == 2 && features.size(0) >= 2, "feature_stats needs [N >= 2, F] features");
  auto x = features.to(torch::kCPU, torch::kFloat64);
  FeatureStats s;
  s.count = x.size(0);
  s.mean = x.mean(0);
  auto centred = x - s.mean;
  s.cov = centred.transpose(0, 1).matmul(centred) / double(s.count - 1);
  return s;
}

double frechet_distance(const FeatureStats& a, const FeatureStats& b) {
  VISPEC_ASSERT(a.mean.sizes() == b.mean.sizes(), "feature sets of different widths");
  const double mean_term = (a.mean - b.mean).pow(2).sum().item<double>();
  auto root_a = sqrt_psd(a.cov);
  auto inner = root_a.matmul(b.cov).matmul(root_a);
  inner = (inner + inner.transpose(0, 1)) / 2;  // symmetric up to round-off; make it exactly so for eigh
  const double cross = torch::linalg_eigvalsh(inner, "L").clamp_min(0).sqrt().sum().item<double>();
  const double d = mean_term + a.cov.trace().item<double>() + b.cov.trace().item<double>() - 2 * cross;
  return std::max(d, 0.0);  // round-off can leave -1e-12 for identical sets
}

}  // namespace vispec
