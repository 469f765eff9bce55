#include "models/gpt/generation_mlps.h"

namespace vispec {

GenerationAlignerImpl::GenerationAlignerImpl(int64_t codes, int64_t embed_dim, int64_t dim,
                                             const torch::TensorOptions& options) {
  embeddings = register_module("embeddings", EmbeddingTable(codes, embed_dim, options));
  fc1 = register_module("fc1", BiasedLinear(embed_dim, dim, options));
  fc2 = register_module("fc2", BiasedLinear(dim, dim, options));
}

torch::Tensor GenerationAlignerImpl::forward(const torch::Tensor& codes) {
  return fc2(torch::gelu(fc1(embeddings(codes))));
}

GenerationHeadImpl::GenerationHeadImpl(int64_t dim, int64_t hidden, int64_t codes,
                                       const torch::TensorOptions& options) {
  proj_out = register_module("proj_out", BiasedLinear(dim, hidden, options));
  vision_head = register_module("vision_head", BiasedLinear(hidden, codes, options));
}

torch::Tensor GenerationHeadImpl::forward(const torch::Tensor& x) { return vision_head(torch::gelu(proj_out(x))); }

}  // namespace vispec
