#include "models/text/t5_encoder.h"

#include <cmath>

#include "core/check.h"

namespace vispec {

namespace F = torch::nn::functional;

torch::Tensor t5_relative_buckets(const torch::Tensor& relative_position, int64_t num_buckets, int64_t max_distance) {
  const int64_t half = num_buckets / 2, max_exact = half / 2;
  auto buckets = relative_position.gt(0).to(torch::kInt64) * half;
  auto distance = relative_position.abs();
  // Logarithmic buckets beyond max_exact: computed in float32 and truncated, as Hugging Face does.
  auto large = max_exact + (torch::log(distance.to(torch::kFloat32) / double(max_exact)) /
                            std::log(double(max_distance) / double(max_exact)) * double(half - max_exact))
                               .to(torch::kInt64);
  large = torch::clamp_max(large, half - 1);
  return buckets + torch::where(distance.lt(max_exact), distance, large);
}

T5AttentionImpl::T5AttentionImpl(const T5Config& c, bool relative_bias, const torch::TensorOptions& options)
    : heads(c.num_heads), d_kv(c.d_kv), num_buckets(c.num_buckets), max_distance(c.max_distance) {
  const int64_t inner = c.num_heads * c.d_kv;
  q = register_module("q", NoBiasLinear(c.d_model, inner, options));
  k = register_module("k", NoBiasLinear(c.d_model, inner, options));
  v = register_module("v", NoBiasLinear(c.d_model, inner, options));
  o = register_module("o", NoBiasLinear(inner, c.d_model, options));
  if (relative_bias)
    relative_attention_bias =
        register_module("relative_attention_bias", EmbeddingTable(c.num_buckets, c.num_heads, options));
}

torch::Tensor T5AttentionImpl::position_bias(int64_t L) {
  VISPEC_ASSERT(!relative_attention_bias.is_empty(), "position bias from a layer without the table");
  const auto device = relative_attention_bias->weight.device();
  const auto pos = torch::arange(L, torch::TensorOptions().dtype(torch::kInt64).device(device));
  const auto relative = pos.view({1, L}) - pos.view({L, 1});                                              // key - query
  const auto values = relative_attention_bias(t5_relative_buckets(relative, num_buckets, max_distance));  // [L, L, H]
  return values.permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat32);
}

torch::Tensor T5AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& bias) {
  const int64_t B = x.size(0), L = x.size(1);
  auto split = [&](const torch::Tensor& t) { return t.view({B, L, heads, d_kv}).transpose(1, 2); };
  const auto qh = split(q(x)), kh = split(k(x)), vh = split(v(x));
  // No 1/sqrt(d_kv): T5 folds it into the initialisation of q. Softmax in float32, as Hugging Face does.
  const auto scores = torch::matmul(qh, kh.transpose(2, 3)).to(torch::kFloat32) + bias;
  const auto weights = torch::softmax(scores, -1).to(x.scalar_type());
  return o(torch::matmul(weights, vh).transpose(1, 2).reshape({B, L, heads * d_kv}));
}

T5FeedForwardImpl::T5FeedForwardImpl(const T5Config& c, const torch::TensorOptions& options)
    : activation(c.activation) {
  if (c.gated) {
    wi_0 = register_module("wi_0", NoBiasLinear(c.d_model, c.d_ff, options));
    wi_1 = register_module("wi_1", NoBiasLinear(c.d_model, c.d_ff, options));
  } else {
    wi = register_module("wi", NoBiasLinear(c.d_model, c.d_ff, options));
  }
  wo = register_module("wo", NoBiasLinear(c.d_ff, c.d_model, options));
}

torch::Tensor T5FeedForwardImpl::forward(const torch::Tensor& x) {
  auto act = [&](const torch::Tensor& h) {
    if (activation == "gelu_new") return F::gelu(h, F::GELUFuncOptions().approximate("tanh"));
    if (activation == "gelu") return F::gelu(h);
    if (activation == "silu") return torch::silu(h);
    return torch::relu(h);
  };
  return wo(wi.is_empty() ? act(wi_0(x)) * wi_1(x) : act(wi(x)));
}

namespace {
// A module that only names its children, so that parameter names follow Hugging Face's ("layer.0.SelfAttention").
struct NamedChildren : torch::nn::Module {};
}  // namespace

T5BlockImpl::T5BlockImpl(const T5Config& c, bool relative_bias, const torch::TensorOptions& options) {
  auto layers = register_module("layer", torch::nn::ModuleList());
  auto attention_layer = std::make_shared<NamedChildren>(), ff_layer = std::make_shared<NamedChildren>();
  attention = attention_layer->register_module("SelfAttention", T5Attention(c, relative_bias, options));
  attention_norm = attention_layer->register_module("layer_norm", RMSNorm(c.d_model, c.eps, options));
  feed_forward = ff_layer->register_module("DenseReluDense", T5FeedForward(c, options));
  ffn_norm = ff_layer->register_module("layer_norm", RMSNorm(c.d_model, c.eps, options));
  layers->push_back(attention_layer);
  layers->push_back(ff_layer);
}

torch::Tensor T5BlockImpl::forward(torch::Tensor x, const torch::Tensor& bias) {
  x = x + attention(attention_norm(x), bias);
  return x + feed_forward(ffn_norm(x));
}

T5EncoderImpl::T5EncoderImpl(const T5Config& c, const torch::TensorOptions& options) : config_(c) {
  shared = register_module("shared", EmbeddingTable(c.vocab_size, c.d_model, options));
  auto encoder = register_module("encoder", std::make_shared<NamedChildren>());
  blocks = encoder->register_module("block", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) blocks->push_back(T5Block(c, /*relative_bias=*/i == 0, options));
  final_layer_norm = encoder->register_module("final_layer_norm", RMSNorm(c.d_model, c.eps, options));
}

torch::Tensor T5EncoderImpl::forward(const torch::Tensor& ids, const torch::Tensor& mask) {
  const int64_t B = ids.size(0), L = ids.size(1);
  auto bias = blocks[0]->as<T5Block>()->attention->position_bias(L);  // [1, H, L, L]
  if (mask.defined()) {
    // Padded keys get float32's lowest value added (Hugging Face's extended attention mask): exp() of it is 0.
    const auto hidden = mask.to(bias.device(), torch::kBool).logical_not().view({B, 1, 1, L});
    bias = bias + hidden.to(torch::kFloat32) * std::numeric_limits<float>::lowest();
  }
  auto x = shared(ids.to(shared->weight.device()));
  for (size_t i = 0; i < blocks->size(); ++i) x = blocks[i]->as<T5Block>()->forward(x, bias);
  return final_layer_norm(x);
}

const std::vector<std::string>& t5_encoder_ignored_prefixes() {
  static const std::vector<std::string> prefixes = {"decoder.", "lm_head.", "encoder.embed_tokens."};
  return prefixes;
}

}  // namespace vispec
