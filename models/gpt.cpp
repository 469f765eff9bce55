#include "models/gpt.h"

#include "core/check.h"
#include "models/rope_2d.h"

namespace vispec {

namespace F = torch::nn::functional;

torch::Tensor causal_mask(int64_t T, torch::Device device) {
  return torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
}

NoBiasLinearImpl::NoBiasLinearImpl(int64_t in, int64_t out, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out, in}, options));
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

AttentionImpl::AttentionImpl(const GptConfig& c, const torch::TensorOptions& options)
    : n_head(c.n_head), n_kv_head(c.kv_heads()), head_dim(c.head_dim()) {
  wqkv = register_module("wqkv", NoBiasLinear(c.dim, (n_head + 2 * n_kv_head) * head_dim, options));
  wo = register_module("wo", NoBiasLinear(n_head * head_dim, c.dim, options));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& rope,
                                     const AttentionMask& mask, KvCache* cache, int64_t layer) {
  const int64_t B = x.size(0), T = x.size(1);
  auto qkv = wqkv(x).split({n_head * head_dim, n_kv_head * head_dim, n_kv_head * head_dim}, -1);
  auto q = apply_rope(qkv[0].view({B, T, n_head, head_dim}), rope).transpose(1, 2);     // [B,H,T,Dh]
  auto k = apply_rope(qkv[1].view({B, T, n_kv_head, head_dim}), rope).transpose(1, 2);  // [B,Hkv,T,Dh]
  auto v = qkv[2].view({B, T, n_kv_head, head_dim}).transpose(1, 2);
  if (cache) std::tie(k, v) = cache->write(layer, k, v);  // now [B,Hkv,S,Dh]
  if (n_kv_head != n_head) {
    k = k.repeat_interleave(n_head / n_kv_head, 1);
    v = v.repeat_interleave(n_head / n_kv_head, 1);
  }
  auto y = attend(q, k, v, mask);  // [B,H,T,Dh]
  return wo(y.transpose(1, 2).reshape({B, T, n_head * head_dim}));
}

FeedForwardImpl::FeedForwardImpl(const GptConfig& c, const torch::TensorOptions& options) {
  const int64_t hidden = c.ffn_hidden();
  w1 = register_module("w1", NoBiasLinear(c.dim, hidden, options));
  w3 = register_module("w3", NoBiasLinear(c.dim, hidden, options));
  w2 = register_module("w2", NoBiasLinear(hidden, c.dim, options));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) { return w2(torch::silu(w1(x)) * w3(x)); }

TransformerBlockImpl::TransformerBlockImpl(const GptConfig& c, const torch::TensorOptions& options) {
  attention = register_module("attention", Attention(c, options));
  feed_forward = register_module("feed_forward", FeedForward(c, options));
  attention_norm = register_module("attention_norm", RMSNorm(c.dim, c.norm_eps, options));
  ffn_norm = register_module("ffn_norm", RMSNorm(c.dim, c.norm_eps, options));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& rope,
                                            const AttentionMask& mask, KvCache* cache, int64_t layer) {
  auto h = x + attention(attention_norm(x), rope, mask, cache, layer);
  return h + feed_forward(ffn_norm(h));
}

LabelEmbedderImpl::LabelEmbedderImpl(int64_t num_classes, int64_t dim, const torch::TensorOptions& options) {
  embedding_table = register_module("embedding_table", EmbeddingTable(num_classes + 1, dim, options));
}

torch::Tensor LabelEmbedderImpl::forward(const torch::Tensor& class_ids) {
  return embedding_table(class_ids).unsqueeze(1);
}

CaptionMlpImpl::CaptionMlpImpl(int64_t in, int64_t dim, const torch::TensorOptions& options) {
  fc1 = register_module("fc1", NoBiasLinear(in, dim, options));
  fc2 = register_module("fc2", NoBiasLinear(dim, dim, options));
}

torch::Tensor CaptionMlpImpl::forward(const torch::Tensor& x) {
  return fc2(F::gelu(fc1(x), F::GELUFuncOptions().approximate("tanh")));
}

CaptionEmbedderImpl::CaptionEmbedderImpl(int64_t caption_dim, int64_t dim, int64_t token_num,
                                         const torch::TensorOptions& options) {
  cap_proj = register_module("cap_proj", CaptionMlp(caption_dim, dim, options));
  uncond_embedding =
      register_buffer("uncond_embedding", torch::randn({token_num, caption_dim}, options) / std::sqrt(double(caption_dim)));
}

torch::Tensor CaptionEmbedderImpl::forward(const torch::Tensor& captions) { return cap_proj(captions); }

GptImpl::GptImpl(const GptConfig& c, const torch::TensorOptions& options, bool random_init) : config_(c) {
  VISPEC_ASSERT(c.dim % c.n_head == 0 && c.n_head % c.kv_heads() == 0, "inconsistent head counts");
  tok_embeddings = register_module("tok_embeddings", EmbeddingTable(c.vocab_size, c.dim, options));
  if (c.text_conditional())
    caption_embedding = register_module("cls_embedding", CaptionEmbedder(c.caption_dim, c.dim, c.cls_token_num, options));
  else
    cls_embedding = register_module("cls_embedding", LabelEmbedder(c.num_classes, c.dim, options));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer; ++i) layers->push_back(TransformerBlock(c, options));
  norm = register_module("norm", RMSNorm(c.dim, c.norm_eps, options));
  output = register_module("output", NoBiasLinear(c.dim, c.vocab_size, options));
  rope_table = rope_2d_table(c.grid_size, c.head_dim(), c.rope_base, c.cls_token_num).to(options.device());
  // LlamaGen's init: normal(0, 0.02) for linears and embeddings.
  if (!random_init) return;
  for (auto& p : named_parameters()) {
    if (p.key().find("norm") == std::string::npos) torch::nn::init::normal_(p.value(), 0.0, 0.02);
  }
}

torch::Tensor GptImpl::embed_classes(const torch::Tensor& class_ids) {
  VISPEC_ASSERT(!config_.text_conditional(), "embed_classes on a text-conditional model");
  return cls_embedding(class_ids);
}

torch::Tensor GptImpl::embed_captions(const torch::Tensor& captions) {
  VISPEC_ASSERT(config_.text_conditional(), "embed_captions on a class-conditional model");
  return caption_embedding(captions);
}

torch::Tensor GptImpl::embed(const Conditions& conditions) {
  const auto device = tok_embeddings->weight.device();
  VISPEC_ASSERT(conditions.text() == config_.text_conditional(),
                conditions.text() ? "captions for a class-conditional model" : "class ids for a text-conditional model");
  if (!conditions.text()) return embed_classes(conditions.class_ids.to(device));
  VISPEC_ASSERT(conditions.captions.size(1) == config_.cls_token_num && conditions.captions.size(2) == config_.caption_dim,
                "captions of shape ", conditions.captions.sizes(), " for ", config_.cls_token_num, " x ",
                config_.caption_dim);
  return embed_captions(conditions.captions.to(device, tok_embeddings->weight.scalar_type()));
}

torch::Tensor GptImpl::condition_visibility(const Conditions& conditions) const {
  if (!conditions.text()) return {};
  return conditions.caption_mask.to(tok_embeddings->weight.device(), torch::kBool);
}

torch::Tensor GptImpl::null_condition(int64_t batch) {
  if (config_.text_conditional()) {
    auto u = caption_embedding->uncond_embedding.unsqueeze(0).expand({batch, -1, -1});
    return caption_embedding(u);
  }
  auto ids = torch::full({batch}, config_.num_classes,
                         torch::TensorOptions().dtype(torch::kInt64).device(tok_embeddings->weight.device()));
  return cls_embedding(ids);
}

GptOutput GptImpl::run(torch::Tensor x, const torch::Tensor& seq_positions, const AttentionMask& mask,
                       KvCache* cache) {
  if (rope_table.device() != x.device()) rope_table = rope_table.to(x.device());  // once, after a model move
  auto rope = rope_table.index_select(0, seq_positions.reshape(-1))
                  .view({seq_positions.size(0), seq_positions.size(1), -1, 2});
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers[i]->as<TransformerBlock>()->forward(x, rope, mask, cache, int64_t(i));
  return {output(norm(x)).to(torch::kFloat32), x};
}

GptOutput GptImpl::forward_sequence(const torch::Tensor& cond, const torch::Tensor& tokens,
                                    const torch::Tensor& visible) {
  const int64_t B = cond.size(0), C = cond.size(1), N = tokens.size(1);
  VISPEC_ASSERT(C == config_.cls_token_num && N < config_.image_tokens(), "sequence too long");
  auto x = torch::cat({cond, tok_embeddings(tokens)}, 1);
  auto pos = torch::arange(C + N, torch::TensorOptions().dtype(torch::kInt64).device(x.device()))
                 .unsqueeze(0).expand({B, C + N});
  // Causal over the whole sequence (SDPA's causal mode, no mask tensor) unless caption padding is hidden.
  auto mask = AttentionMask::causal_block();
  if (visible.defined()) {
    auto rows = causal_mask(C + N, x.device()).unsqueeze(0).expand({B, C + N, C + N}).clone();
    mask.dense = apply_prefix_visibility(rows, visible.to(x.device()), pos).unsqueeze(1);
  }
  auto out = run(x, pos, mask, nullptr);
  return {out.logits.narrow(1, C - 1, N + 1), out.hidden.narrow(1, C - 1, N + 1)};
}

KvCache GptImpl::make_cache(int64_t batch, int64_t extra) const {
  const auto& w = tok_embeddings->weight;
  return KvCache(config_.n_layer, batch, config_.kv_heads(), config_.max_seq_len() + extra, config_.head_dim(),
                 w.scalar_type(), w.device());
}

GptOutput GptImpl::prefill(KvCache& cache, const torch::Tensor& cond, const torch::Tensor& visible) {
  const int64_t B = cond.size(0), C = cond.size(1);
  if (visible.defined()) cache.hide_prefix_keys(visible);
  auto pos = torch::arange(C, torch::TensorOptions().dtype(torch::kInt64).device(cond.device()))
                 .unsqueeze(0).expand({B, C});
  return run(cond, pos, cache.begin_block(C, torch::Tensor()), &cache);  // causal
}

GptOutput GptImpl::decode_block(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                                const torch::Tensor& block_mask) {
  const auto mask = cache.begin_block(tokens.size(1), block_mask);
  return run(tok_embeddings(tokens), positions + config_.cls_token_num, mask, &cache);
}

}  // namespace vispec
