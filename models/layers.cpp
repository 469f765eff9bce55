#include "models/layers.h"

namespace vispec {

NoBiasLinearImpl::NoBiasLinearImpl(int64_t in, int64_t out, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out, in}, options));
}

BiasedLinearImpl::BiasedLinearImpl(int64_t in, int64_t out, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out, in}, options));
  bias = register_parameter("bias", torch::zeros({out}, options));
}

EmbeddingTableImpl::EmbeddingTableImpl(int64_t count, int64_t dim, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({count, dim}, options));
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps_, const torch::TensorOptions& options) : eps(eps_) {
  weight = register_parameter("weight", torch::ones({dim}, options));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  auto xf = x.to(torch::kFloat32);
  auto y = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return y.to(x.scalar_type()) * weight;
}

HeadLayerNormImpl::HeadLayerNormImpl(int64_t heads, int64_t head_dim, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::ones({heads, head_dim}, options));
  bias = register_parameter("bias", torch::zeros({heads, head_dim}, options));
}

torch::Tensor HeadLayerNormImpl::forward(const torch::Tensor& x) {
  return torch::layer_norm(x, {x.size(-1)}, {}, {}, 1e-5) * weight + bias;
}

}  // namespace vispec
