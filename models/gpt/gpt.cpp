#include "models/gpt/gpt.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/attend_cache.h"
#include "kernels/linear.h"
#include "kernels/rms_norm.h"
#include "kernels/rope_write_kv.h"
#include "kernels/kernel_check.h"
#include "models/gpt/rope_1d.h"
#include "models/gpt/rope_2d.h"
#include "models/gpt/sequence_layout.h"

namespace vispec {

namespace F = torch::nn::functional;

torch::Tensor causal_mask(int64_t T, torch::Device device) {
  return torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
}

AttentionImpl::AttentionImpl(const GptConfig& c, const torch::TensorOptions& options)
    : n_head(c.n_head), n_kv_head(c.kv_heads()), head_dim(c.head_dim()), rope_kind(c.rope) {
  if (c.fused_qkv) {
    wqkv = register_module("wqkv", NoBiasLinear(c.dim, (n_head + 2 * n_kv_head) * head_dim, options));
  } else {
    wq = register_module("wq", NoBiasLinear(c.dim, n_head * head_dim, options));
    wk = register_module("wk", NoBiasLinear(c.dim, n_kv_head * head_dim, options));
    wv = register_module("wv", NoBiasLinear(c.dim, n_kv_head * head_dim, options));
  }
  wo = register_module("wo", NoBiasLinear(n_head * head_dim, c.dim, options));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", HeadLayerNorm(n_head, head_dim, options));
    k_norm = register_module("k_norm", HeadLayerNorm(n_kv_head, head_dim, options));
  }
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& rope, const AttentionMask& mask,
                                     KvCache* cache, int64_t layer) {
  if (cache && !q_norm && kernels::use_fused(x, cache->keys(layer))) return forward_fused(x, rope, mask, *cache, layer);
  const int64_t B = x.size(0), T = x.size(1);
  torch::Tensor q, k, v;
  if (wqkv) {
    auto qkv = wqkv(x).split({n_head * head_dim, n_kv_head * head_dim, n_kv_head * head_dim}, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    q = wq(x), k = wk(x), v = wv(x);
  }
  q = q.view({B, T, n_head, head_dim});
  k = k.view({B, T, n_kv_head, head_dim});
  if (q_norm) q = q_norm(q), k = k_norm(k);  // before RoPE (Chameleon)
  const auto rotate = rope_kind == RopeKind::grid_2d ? apply_rope : apply_rope_half_split;
  q = rotate(q, rope).transpose(1, 2);  // [B,H,T,Dh]
  k = rotate(k, rope).transpose(1, 2);  // [B,Hkv,T,Dh]
  v = v.view({B, T, n_kv_head, head_dim}).transpose(1, 2);
  if (cache) std::tie(k, v) = cache->write(layer, k, v);  // now [B,Hkv,S,Dh]
  auto y = attend(q, k, v, mask);  // [B,H,T,Dh]; grouped-query attention reads each K/V head for its group
  return wo(y.transpose(1, 2).reshape({B, T, n_head * head_dim}));
}

torch::Tensor AttentionImpl::forward_fused(const torch::Tensor& x, const torch::Tensor& rope, const AttentionMask& mask,
                                           KvCache& cache, int64_t layer) {
  const auto& w = wqkv ? wqkv->weight : merged_qkv.of({&wq->weight, &wk->weight, &wv->weight});
  const auto q = kernels::rope_write_kv(kernels::linear(x, w), rope, cache.keys(layer), cache.values(layer),
                                        cache.block_slots(), n_head, n_kv_head, rope_kind == RopeKind::sequence_1d);
  std::optional<torch::Tensor> dense;
  if (mask.dense.defined()) dense = mask.dense;
  return wo(
      kernels::attend_cache(q, cache.keys(layer), cache.values(layer), cache.attended_keys(), dense, mask.causal));
}

FeedForwardImpl::FeedForwardImpl(const GptConfig& c, const torch::TensorOptions& options) {
  const int64_t hidden = c.ffn_hidden();
  w1 = register_module("w1", NoBiasLinear(c.dim, hidden, options));
  w3 = register_module("w3", NoBiasLinear(c.dim, hidden, options));
  w2 = register_module("w2", NoBiasLinear(hidden, c.dim, options));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  if (kernels::use_fused(x, w1->weight))
    return w2(kernels::linear_silu_mul(x, merged_w13.of({&w1->weight, &w3->weight})));
  return w2(torch::silu(w1(x)) * w3(x));
}

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

std::pair<torch::Tensor, torch::Tensor> TransformerBlockImpl::forward_deferred(const torch::Tensor& x,
                                                                               const torch::Tensor& pending,
                                                                               const torch::Tensor& rope,
                                                                               const AttentionMask& mask,
                                                                               KvCache* cache, int64_t layer) {
  torch::Tensor stream = x, normed;
  if (pending.defined())
    std::tie(stream, normed) = kernels::add_rms_norm(x, pending, attention_norm->weight, attention_norm->eps);
  else normed = kernels::rms_norm(x, attention_norm->weight, attention_norm->eps);
  const auto [h, ffn_in] =
      kernels::add_rms_norm(stream, attention(normed, rope, mask, cache, layer), ffn_norm->weight, ffn_norm->eps);
  return {h, feed_forward(ffn_in)};
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
  uncond_embedding = register_buffer("uncond_embedding",
                                     torch::randn({token_num, caption_dim}, options) / std::sqrt(double(caption_dim)));
}

torch::Tensor CaptionEmbedderImpl::forward(const torch::Tensor& captions) { return cap_proj(captions); }

GptImpl::GptImpl(const GptConfig& c, const torch::TensorOptions& options, bool random_init) : config_(c) {
  VISPEC_ASSERT(c.dim % c.n_head == 0 && c.n_head % c.kv_heads() == 0, "inconsistent head counts");
  VISPEC_ASSERT(!c.prompted() || c.image_token_offset + c.vocab_size <= c.text_vocab_size,
                "image tokens beyond the text vocabulary");
  tok_embeddings = register_module("tok_embeddings", EmbeddingTable(c.token_table_size(), c.dim, options));
  if (c.text_conditional())
    caption_embedding =
        register_module("cls_embedding", CaptionEmbedder(c.caption_dim, c.dim, c.cls_token_num, options));
  else if (!c.prompted())
    cls_embedding = register_module("cls_embedding", LabelEmbedder(c.num_classes, c.dim, options));
  if (c.image_input == ImageInput::aligner_mlp)
    image_aligner =
        register_module("image_aligner", GenerationAligner(c.vocab_size, c.image_embed_dim, c.dim, options));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer; ++i) layers->push_back(TransformerBlock(c, options));
  norm = register_module("norm", RMSNorm(c.dim, c.norm_eps, options));
  if (c.image_output == ImageOutput::linear)
    output = register_module("output", NoBiasLinear(c.dim, c.vocab_size, options));
  else image_head = register_module("image_head", GenerationHead(c.dim, c.image_mlp_dim, c.vocab_size, options));
  rope_table = (c.rope == RopeKind::grid_2d ? rope_2d_table(c.grid_size, c.head_dim(), c.rope_base, c.cls_token_num)
                                            : rope_1d_table(c.max_seq_len(), c.head_dim(), c.rope_base))
                   .to(options.device());
  // LlamaGen's init: normal(0, 0.02) for linears and embeddings (norms stay ones, biases zeros).
  if (!random_init) return;
  for (auto& p : named_parameters()) {
    const auto& name = p.key();
    const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (name.find("norm") == std::string::npos && !is_bias) torch::nn::init::normal_(p.value(), 0.0, 0.02);
  }
}

torch::Tensor GptImpl::embed_classes(const torch::Tensor& class_ids) {
  VISPEC_ASSERT(cls_embedding, "embed_classes on a model that is not class-conditional");
  return cls_embedding(class_ids);
}

torch::Tensor GptImpl::embed_captions(const torch::Tensor& captions) {
  VISPEC_ASSERT(config_.text_conditional(), "embed_captions on a class-conditional model");
  return caption_embedding(captions);
}

torch::Tensor GptImpl::null_condition(int64_t batch) {
  VISPEC_ASSERT(!config_.prompted(), "a prompted model's unconditional stream is a prompt of its own");
  if (config_.text_conditional()) {
    auto u = caption_embedding->uncond_embedding.unsqueeze(0).expand({batch, -1, -1});
    return caption_embedding(u);
  }
  auto ids = torch::full({batch}, config_.num_classes, torch::TensorOptions().dtype(torch::kInt64).device(device()));
  return cls_embedding(ids);
}

Prefix GptImpl::prefix(const Conditions& conditions, bool unconditional) {
  const auto dev = device();
  const char* expected = config_.prompted() ? "prompt tokens" : config_.text_conditional() ? "captions" : "class ids";
  VISPEC_ASSERT(conditions.kind() == (config_.prompted()           ? ConditionKind::prompt
                                      : config_.text_conditional() ? ConditionKind::caption
                                                                   : ConditionKind::class_id),
                "conditions of the wrong kind for this model (it takes ", expected, ")");
  const int64_t B = conditions.size(), C = config_.cls_token_num;
  switch (conditions.kind()) {
    case ConditionKind::class_id:
      return {unconditional ? null_condition(B) : embed_classes(conditions.class_ids.to(dev)), {}};
    case ConditionKind::caption: {
      VISPEC_ASSERT(conditions.captions.size(1) == C && conditions.captions.size(2) == config_.caption_dim,
                    "captions of shape ", conditions.captions.sizes(), " for ", C, " x ", config_.caption_dim);
      auto embeddings = unconditional
                            ? null_condition(B)
                            : embed_captions(conditions.captions.to(dev, tok_embeddings->weight.scalar_type()));
      return {embeddings, conditions.caption_mask.to(dev, torch::kBool)};
    }
    case ConditionKind::prompt: {
      const auto& ids = unconditional ? conditions.null_prompt_ids : conditions.prompt_ids;
      const auto& mask = unconditional ? conditions.null_prompt_mask : conditions.prompt_mask;
      VISPEC_ASSERT(ids.defined() && ids.size(1) == C, "prompts over ", ids.defined() ? ids.size(1) : 0,
                    " positions for a model of ", C);
      return {tok_embeddings(ids.to(dev)), mask.to(dev, torch::kBool)};
    }
  }
  VISPEC_FAIL("unreachable");
}

torch::Tensor GptImpl::embed_image(const torch::Tensor& codes) {
  if (image_aligner) return image_aligner(codes);
  return tok_embeddings(config_.image_token_offset ? codes + config_.image_token_offset : codes);
}

torch::Tensor GptImpl::image_logits(const torch::Tensor& features) {
  return image_head ? image_head(features) : output(features);
}

GptOutput GptImpl::run(torch::Tensor x, const torch::Tensor& seq_positions, const torch::Tensor& shift,
                       const AttentionMask& mask, KvCache* cache) {
  if (rope_table.device() != x.device()) rope_table = rope_table.to(x.device());  // once, after a model move
  auto index = seq_positions;
  if (config_.rope == RopeKind::sequence_1d && shift.defined())
    index = (seq_positions - shift.unsqueeze(1)).clamp_min(0);  // hidden padding: position 0, never seen
  auto rope = rope_table.index_select(0, index.reshape(-1)).view({index.size(0), index.size(1), -1, 2});
  if (kernels::use_fused(x, norm->weight)) {
    // Each block's last residual add travels into the next norm (TransformerBlockImpl::forward_deferred), the
    // last one into the final norm: a kernel fewer per layer on a GPU.
    torch::Tensor pending;
    for (size_t i = 0; i < layers->size(); ++i)
      std::tie(x, pending) =
          layers[i]->as<TransformerBlock>()->forward_deferred(x, pending, rope, mask, cache, int64_t(i));
    if (!pending.defined()) return {image_logits(norm(x)).to(torch::kFloat32), x};
    const auto [hidden, normed] = kernels::add_rms_norm(x, pending, norm->weight, norm->eps);
    return {image_logits(normed).to(torch::kFloat32), hidden};
  }
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers[i]->as<TransformerBlock>()->forward(x, rope, mask, cache, int64_t(i));
  return {image_logits(norm(x)).to(torch::kFloat32), x};
}

GptOutput GptImpl::forward_sequence(const torch::Tensor& cond, const torch::Tensor& tokens,
                                    const torch::Tensor& visible) {
  const int64_t B = cond.size(0), C = cond.size(1), N = tokens.size(1);
  VISPEC_ASSERT(C == config_.cls_token_num && N < config_.image_tokens(), "sequence too long");
  // With end-of-line tokens, the tokens laid out with theirs: every row's layout is the same, and the whole
  // sequence is still causal.
  torch::Tensor images = embed_image(tokens), outputs;  // outputs: the entries whose outputs are the tokens'
  if (config_.row_ends() && N > 0) {
    const auto layout = eol_block(torch::arange(N, torch::kInt64).unsqueeze(0), config_.grid_size,
                                  config_.image_tokens(), images.device());
    images = with_row_ends(images, layout.source.expand({B, -1}), layout.is_eol.expand({B, -1}));
    outputs = layout.output_entry.squeeze(0) + C;
  }
  const int64_t S = C + images.size(1);
  auto x = torch::cat({cond, images}, 1);
  auto pos =
      torch::arange(S, torch::TensorOptions().dtype(torch::kInt64).device(x.device())).unsqueeze(0).expand({B, S});
  // Causal over the whole sequence (SDPA's causal mode, no mask tensor) unless prefix positions are hidden.
  auto mask = AttentionMask::causal_block();
  torch::Tensor shift;
  if (visible.defined()) {
    const auto vis = visible.to(x.device());
    auto rows = causal_mask(S, x.device()).unsqueeze(0).expand({B, S, S}).clone();
    mask.dense = apply_prefix_visibility(rows, vis, pos).unsqueeze(1);
    shift = hidden_prefix_count(vis);
  }
  auto out = run(x, pos, shift, mask, nullptr);
  if (!outputs.defined()) return {out.logits.narrow(1, C - 1, N + 1), out.hidden.narrow(1, C - 1, N + 1)};
  const auto at = torch::cat({torch::full({1}, C - 1, outputs.options()), outputs});
  return {out.logits.index_select(1, at), out.hidden.index_select(1, at)};
}

torch::Tensor GptImpl::with_row_ends(const torch::Tensor& images, const torch::Tensor& source,
                                     const torch::Tensor& is_eol) {
  const int64_t D = images.size(2);
  auto x = images.gather(1, source.unsqueeze(2).expand({-1, -1, D}));
  const auto eol = tok_embeddings->weight.select(0, config_.eol_token).view({1, 1, D});  // a view: no lookup
  return torch::where(is_eol.unsqueeze(2), eol, x);
}

torch::Tensor GptImpl::image_slots(const torch::Tensor& positions) const {
  const auto slots = positions + config_.cls_token_num;
  return config_.row_ends() ? slots + positions.div(config_.grid_size, "floor") : slots;
}

KvCache GptImpl::make_cache(int64_t batch, int64_t extra, bool static_lengths) const {
  const auto& w = tok_embeddings->weight;
  // A pending block's node may bring an end-of-line entry with it (a draft tree's siblings at a row's end).
  if (config_.row_ends()) extra *= 2;
  // A caption's or prompt's hidden prefix is written in place at every prefill of a static cache: its buffers
  // are made with the cache, so that every copy of it shares them (a class model hides nothing).
  const int64_t hidden = config_.text_conditional() || config_.prompted() ? config_.cls_token_num : 0;
  return KvCache(config_.n_layer, batch, config_.kv_heads(), config_.max_seq_len() + extra, config_.head_dim(),
                 w.scalar_type(), w.device(), KvLengths{static_lengths, static_lengths ? hidden : 0});
}

KvCache GptImpl::make_prefill_cache(int64_t batch, const KvCache& decode_cache) const {
  const auto& w = tok_embeddings->weight;
  const int64_t C = config_.cls_token_num, bucket = KvCache::kLengthBucket;
  const int64_t capacity = std::min(decode_cache.capacity(), (C + bucket - 1) / bucket * bucket);
  const int64_t hidden = decode_cache.prefix_visible().defined() ? decode_cache.prefix_visible().size(1) : 0;
  return KvCache(config_.n_layer, batch, config_.kv_heads(), capacity, config_.head_dim(), w.scalar_type(), w.device(),
                 KvLengths{decode_cache.device_lengths(), decode_cache.device_lengths() ? hidden : 0});
}

GptOutput GptImpl::prefill(KvCache& cache, const torch::Tensor& cond, const torch::Tensor& visible) {
  const int64_t B = cond.size(0), C = cond.size(1);
  auto pos =
      torch::arange(C, torch::TensorOptions().dtype(torch::kInt64).device(cond.device())).unsqueeze(0).expand({B, C});
  KvBlock block{C, torch::Tensor()};  // causal
  block.visible = visible;
  const auto mask = cache.begin_block(block);  // before prefix_shift: the block hides the prefix
  return run(cond, pos, prefix_shift(cache), mask, &cache);
}

GptOutput GptImpl::decode_block(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                                const torch::Tensor& block_mask, const torch::Tensor& committed) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  if (config_.row_ends()) {
    // Which fed tokens end a row decides the block's width: one read of the positions (end-of-line models only).
    const auto layout = eol_block(positions, config_.grid_size, config_.image_tokens(), tokens.device());
    if (layout.entries > T) {
      const auto bm = block_mask.defined() ? block_mask : causal_mask(T, tokens.device());
      KvBlock block{layout.entries, eol_block_mask(bm, layout), committed};
      block.node_starts = layout.node_starts;
      block.entry_node = layout.source;
      const auto mask = cache.begin_block(block);
      const auto slots = image_slots(positions).gather(1, layout.source) + layout.is_eol.to(torch::kInt64);
      auto out = run(with_row_ends(embed_image(tokens), layout.source, layout.is_eol), slots, prefix_shift(cache), mask,
                     &cache);
      const auto at = layout.output_entry;
      return {out.logits.gather(1, at.unsqueeze(2).expand({B, T, out.logits.size(2)})),
              out.hidden.gather(1, at.unsqueeze(2).expand({B, T, out.hidden.size(2)}))};
    }
  }
  const auto mask = cache.begin_block(KvBlock{T, block_mask, committed});
  return run(embed_image(tokens), image_slots(positions), prefix_shift(cache), mask, &cache);
}

torch::Tensor GptImpl::prefix_shift(const KvCache& cache) const {
  if (config_.rope != RopeKind::sequence_1d || !cache.prefix_visible().defined()) return {};
  return cache.prefix_hidden();
}

}  // namespace vispec
