// Janus-Pro's image-token input and output, beside its language model's text vocabulary:
//   in:  code -> generation embedding [V, e] -> fc1 (e -> D, bias) -> GELU (erf) -> fc2 (D -> D, bias)
//   out: hidden D -> proj_out (D -> P, bias) -> GELU (erf) -> vision_head (P -> V, bias)
// (Hugging Face's generation_embeddings / generation_aligner / generation_head; DeepSeek's gen_embed /
// gen_aligner / gen_head.)
#pragma once

#include <torch/torch.h>

#include "models/gpt/layers.h"

namespace vispec {

struct GenerationAlignerImpl : torch::nn::Module {
  GenerationAlignerImpl(int64_t codes, int64_t embed_dim, int64_t dim, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& codes);  // [...] int64 -> [..., D]
  EmbeddingTable embeddings{nullptr};
  BiasedLinear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(GenerationAligner);

struct GenerationHeadImpl : torch::nn::Module {
  GenerationHeadImpl(int64_t dim, int64_t hidden, int64_t codes, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // [..., D] -> [..., V]
  BiasedLinear proj_out{nullptr}, vision_head{nullptr};
};
TORCH_MODULE(GenerationHead);

}  // namespace vispec
