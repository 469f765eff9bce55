// The small layers the transformer models are built from (the GPT, T5, the drafters).
//
// Parameters are created directly with the options (device, dtype) the model runs in, so loading a 7B
// checkpoint never holds a float32 copy of it in host memory. Hence the linear layers and the embedding table
// are written here rather than taken from torch::nn (which allocate float32 on the CPU).
#pragma once

#include <torch/torch.h>

namespace vispec {

struct NoBiasLinearImpl : torch::nn::Module {
  NoBiasLinearImpl(int64_t in, int64_t out, const torch::TensorOptions& options);
  // One operator: kernels::linear where the fused operators run (a few rows on CUDA: a kernel of its own), else
  // at::linear (torch::nn::functional::linear dispatches a transpose and a matmul).
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;  // [out, in]
};
TORCH_MODULE(NoBiasLinear);

// With a bias: Janus-Pro's generation aligner and head.
struct BiasedLinearImpl : torch::nn::Module {
  BiasedLinearImpl(int64_t in, int64_t out, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) { return at::linear(x, weight, bias); }
  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out]
};
TORCH_MODULE(BiasedLinear);

struct EmbeddingTableImpl : torch::nn::Module {
  EmbeddingTableImpl(int64_t count, int64_t dim, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& ids) { return torch::embedding(weight, ids); }
  torch::Tensor weight;  // [count, dim]
};
TORCH_MODULE(EmbeddingTable);

// Two or three linear layers' weights as one matrix [sum of outs, in], so that a decode step runs one product
// where the model has several (q, k and v; w1 and w3), as gpt-fast fuses them at load. The layers' own
// parameters become views into it, so the weights are held once; it is remade when they no longer are (a move
// to another device or dtype replaces them). Made at the first fused forward, before any graph is captured.
class MergedWeights {
 public:
  const torch::Tensor& of(std::initializer_list<torch::Tensor*> parts);

 private:
  torch::Tensor merged_;
};

// LlamaGen's RMSNorm: statistics in float32, cast back, then times the weight in the model's dtype.
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t dim, double eps, const torch::TensorOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;
  double eps;
};
TORCH_MODULE(RMSNorm);

// Chameleon's qk-norm: each head's vector normalised over head_dim (LayerNorm statistics, eps 1e-5, no affine
// inside), then that head's own weight and bias. x [..., H, Dh].
struct HeadLayerNormImpl : torch::nn::Module {
  HeadLayerNormImpl(int64_t heads, int64_t head_dim, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight, bias;  // [H, Dh]
};
TORCH_MODULE(HeadLayerNorm);

}  // namespace vispec
