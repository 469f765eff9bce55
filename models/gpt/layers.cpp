#include "models/gpt/layers.h"

#include "kernels/linear.h"
#include "kernels/rms_norm.h"

namespace vispec {

NoBiasLinearImpl::NoBiasLinearImpl(int64_t in, int64_t out, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out, in}, options));
}

torch::Tensor NoBiasLinearImpl::forward(const torch::Tensor& x) {
  return kernels::linear(x, weight);  // the fused operator where it runs, else at::linear
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

const torch::Tensor& MergedWeights::of(std::initializer_list<torch::Tensor*> parts) {
  // Current while each part is still the view at its row (addresses only: no operator runs on this path).
  bool current = merged_.defined();
  int64_t row = 0;
  for (const auto* part : parts) {
    current =
        current && part->dim() == 2 && part->size(1) == merged_.size(1) && row + part->size(0) <= merged_.size(0) &&
        part->data_ptr() == static_cast<char*>(merged_.data_ptr()) + row * merged_.stride(0) * merged_.element_size();
    row += part->size(0);
  }
  if (current && row == merged_.size(0)) return merged_;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> weights;
  for (const auto* part : parts) weights.push_back(*part);
  merged_ = torch::cat(weights, 0);
  row = 0;
  for (auto* part : parts) {
    const int64_t rows = part->size(0);
    part->set_data(merged_.narrow(0, row, rows));
    row += rows;
  }
  return merged_;
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  return kernels::rms_norm(x, weight, eps);  // the fused operator where it runs, else LlamaGen's formula
}

HeadLayerNormImpl::HeadLayerNormImpl(int64_t heads, int64_t head_dim, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::ones({heads, head_dim}, options));
  bias = register_parameter("bias", torch::zeros({heads, head_dim}, options));
}

torch::Tensor HeadLayerNormImpl::forward(const torch::Tensor& x) {
  return torch::layer_norm(x, {x.size(-1)}, {}, {}, 1e-5) * weight + bias;
}

}  // namespace vispec
