// The Llama-family image decoder, following LlamaGen's GPT exactly (docs/algorithms.md "The model"):
// pre-norm blocks of RMSNorm (fp32 statistics) -> attention with RoPE -> SwiGLU FFN, no biases, class
// embedding with a null class (or a caption MLP), untied output head. Parameter names match LlamaGen's state
// dicts, so its checkpoints load unchanged. The options of GptConfig make the same model Chameleon's, Janus-Pro's
// or Emu3's (a text prompt through the token table, 1D RoPE, qk-norm, separate projections, grouped-query
// attention, their image-token input and output); their checkpoints' names map onto these
// (models/checkpoints/weight_keys.h).
//
// Sequence layout: [cls_token_num prefix positions][image tokens 0 .. N-1]. The output at sequence
// position cls_token_num - 1 + j predicts image token j. Every forward returns the logits (float32) over the
// image codes and the last layer's hidden states *before* the final norm (what EAGLE and SSD heads read).
#pragma once

#include <torch/torch.h>

#include "models/gpt/conditions.h"
#include "models/gpt/generation_mlps.h"
#include "models/gpt/gpt_config.h"
#include "models/gpt/kv_cache.h"
#include "models/gpt/layers.h"

namespace vispec {

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const GptConfig& c, const torch::TensorOptions& options = {});
  // x [B, T, D]; rope [B, T, Dh/2, 2]; cache null = attend within x only.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& rope, const AttentionMask& mask, KvCache* cache,
                        int64_t layer);
  NoBiasLinear wqkv{nullptr};                          // fused_qkv: [q; k; v] rows
  NoBiasLinear wq{nullptr}, wk{nullptr}, wv{nullptr};  // otherwise
  NoBiasLinear wo{nullptr};
  HeadLayerNorm q_norm{nullptr}, k_norm{nullptr};  // qk_norm only
  int64_t n_head, n_kv_head, head_dim;
  RopeKind rope_kind;
  MergedWeights merged_qkv;  // wq, wk, wv as one [q; k; v] matrix for the fused path

 private:
  // A cached forward in three fused operators (kernels/linear.h, rope_write_kv.h, attend_cache.h): the projection, RoPE
  // with the cache write, attention.
  torch::Tensor forward_fused(const torch::Tensor& x, const torch::Tensor& rope, const AttentionMask& mask,
                              KvCache& cache, int64_t layer);
};
TORCH_MODULE(Attention);

struct FeedForwardImpl : torch::nn::Module {
  explicit FeedForwardImpl(const GptConfig& c, const torch::TensorOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x);  // w2(silu(w1 x) * w3 x)
  NoBiasLinear w1{nullptr}, w2{nullptr}, w3{nullptr};
  MergedWeights merged_w13;  // [w1; w3] for the fused path
};
TORCH_MODULE(FeedForward);

struct TransformerBlockImpl : torch::nn::Module {
  explicit TransformerBlockImpl(const GptConfig& c, const torch::TensorOptions& options = {});
  // The composite formulas (training, CompositeOnly, and devices or dtypes without the fused kernels).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& rope, const AttentionMask& mask, KvCache* cache,
                        int64_t layer);
  // The fused path, with the block's last residual add left to the caller: takes the stream x and the previous
  // block's feed-forward output `pending` (undefined for the first block), adds them inside this block's first
  // norm (kernels::add_rms_norm) and returns (the stream after attention, this block's feed-forward output).
  // The same bits as forward(), one operator fewer per layer (GptImpl::run).
  std::pair<torch::Tensor, torch::Tensor> forward_deferred(const torch::Tensor& x, const torch::Tensor& pending,
                                                           const torch::Tensor& rope, const AttentionMask& mask,
                                                           KvCache* cache, int64_t layer);
  Attention attention{nullptr};
  FeedForward feed_forward{nullptr};
  RMSNorm attention_norm{nullptr}, ffn_norm{nullptr};
};
TORCH_MODULE(TransformerBlock);

// Class ids -> [B, 1, D]; id num_classes is the null class used by CFG and condition dropout.
struct LabelEmbedderImpl : torch::nn::Module {
  LabelEmbedderImpl(int64_t num_classes, int64_t dim, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& class_ids);
  EmbeddingTable embedding_table{nullptr};
};
TORCH_MODULE(LabelEmbedder);

struct CaptionMlpImpl : torch::nn::Module {
  CaptionMlpImpl(int64_t in, int64_t dim, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // fc2(gelu_tanh(fc1 x)), no biases
  NoBiasLinear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(CaptionMlp);

// Caption features [B, C, caption_dim] -> [B, C, D]; the learned uncond_embedding replaces the caption for
// the unconditional stream.
struct CaptionEmbedderImpl : torch::nn::Module {
  CaptionEmbedderImpl(int64_t caption_dim, int64_t dim, int64_t token_num, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& captions);
  CaptionMlp cap_proj{nullptr};
  torch::Tensor uncond_embedding;  // [token_num, caption_dim]
};
TORCH_MODULE(CaptionEmbedder);

// What a stream's prefix is: its embeddings and which of its positions later queries may see.
struct Prefix {
  torch::Tensor embeddings;  // [B, C, D]
  torch::Tensor visible;     // [B, C] bool; undefined: every position
};

struct GptOutput {
  torch::Tensor logits;  // [B, T, V] float32
  torch::Tensor hidden;  // [B, T, D] last layer, before the final norm
};

class GptImpl : public torch::nn::Module {
 public:
  // options: the device and dtype of every parameter (default: float32 on the CPU, as for training).
  // random_init false: the parameters are left as allocated, for a model whose weights load_weights fills
  // next (it checks that the file has every one); LlamaGen's random init of a large GPT takes seconds on a CPU.
  explicit GptImpl(const GptConfig& config, const torch::TensorOptions& options = {}, bool random_init = true);
  const GptConfig& config() const { return config_; }

  torch::Device device() const { return tok_embeddings->weight.device(); }

  // Condition embeddings [B, cls_token_num, D]. For class models: ids [B] int64, num_classes = null.
  torch::Tensor embed_classes(const torch::Tensor& class_ids);
  // For text models: captions [B, cls_token_num, caption_dim].
  torch::Tensor embed_captions(const torch::Tensor& captions);
  // The unconditional stream's embeddings of a class or caption model: the null class, or uncond_embedding
  // through the caption MLP.
  torch::Tensor null_condition(int64_t batch);
  // One stream's prefix, on the model's device, as the model's conditioning asks: the class (or null class);
  // the caption (or uncond_embedding) with the caption mask (the unconditional stream takes its conditional
  // row's mask, as LlamaGen's generate does); the prompt's tokens (or the unconditional prompt's) with its mask.
  Prefix prefix(const Conditions& conditions, bool unconditional = false);

  // Image codes [...] -> their input embeddings [..., D]; final-normed features [..., D] -> logits over the
  // image codes [..., V] in the model's dtype. What drafters reading the target's states use.
  torch::Tensor embed_image(const torch::Tensor& codes);
  torch::Tensor image_logits(const torch::Tensor& features);

  // Teacher forcing / training: cond [B, C, D], tokens [B, N] (N < image tokens). No cache, causal, with
  // the condition positions that `visible` [B, C] hides taken out (if defined).
  // Returns N + 1 outputs: output j predicts image token j.
  GptOutput forward_sequence(const torch::Tensor& cond, const torch::Tensor& tokens, const torch::Tensor& visible = {});

  // A cache sized for `batch` rows of the full sequence (plus `extra` slots for pending draft blocks), static
  // (its lengths on the device, KvLengths) where asked.
  KvCache make_cache(int64_t batch, int64_t extra = 0, bool static_lengths = false) const;
  // A cache for prefills alone, whose rows KvCache::take_rows then moves into `decode_cache` (a row taking a new
  // sample): `batch` rows of the condition positions, static where decode_cache is, and read through the same
  // length bucket as decode_cache's own prefill, so that a sample's prefill computes the same in either.
  KvCache make_prefill_cache(int64_t batch, const KvCache& decode_cache) const;
  // Appends the condition positions as a pending causal block; `visible` [B, C] (if defined) hides the
  // others from every later query (KvBlock::visible). Returns one output per condition position;
  // the last predicts image token 0. Call cache.advance() to commit.
  GptOutput prefill(KvCache& cache, const torch::Tensor& cond, const torch::Tensor& visible = {});
  // Appends image tokens [B, T] at image indices `positions` [B, T] (for RoPE) as a pending block under
  // block_mask ([T, T] or [B, T, T], true = may attend). Output t predicts the token after positions[t]. A
  // model whose rows end in an end-of-line token adds that token's entry after each token that ends a row
  // (models/gpt/sequence_layout.h; one read of `positions`) and returns its output as the row-ending token's.
  // committed: which committed entries each query sees (KvBlock::committed; undefined: all).
  GptOutput decode_block(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                         const torch::Tensor& block_mask, const torch::Tensor& committed = {});

  // [token_table_size, D]: image codes (LlamaGen), or the text vocabulary with the image tokens at
  // image_token_offset (the LLM families).
  EmbeddingTable tok_embeddings{nullptr};
  // Registered as "cls_embedding" (LlamaGen's name), whichever of the two the config asks for.
  LabelEmbedder cls_embedding{nullptr};
  CaptionEmbedder caption_embedding{nullptr};
  GenerationAligner image_aligner{nullptr};  // image_input aligner_mlp (Janus-Pro)
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
  NoBiasLinear output{nullptr};        // image_output linear: [V, D]
  GenerationHead image_head{nullptr};  // image_output head_mlp (Janus-Pro)
  // [positions, Dh/2, 2] float32 whatever the model's dtype (LlamaGen keeps it fp32): indexed by sequence slot
  // (2D: cls_token_num zero rows, then the grid) or by position in the row's sequence (1D). Not a parameter
  // or buffer (checkpoints do not hold it): made on the parameters' device, and moved once if the model moves.
  torch::Tensor rope_table;

 private:
  // shift [B] int64 (1D RoPE; undefined: none): a row's position is its slot less its hidden prefix slots.
  GptOutput run(torch::Tensor x, const torch::Tensor& seq_positions, const torch::Tensor& shift,
                const AttentionMask& mask, KvCache* cache);
  torch::Tensor prefix_shift(const KvCache& cache) const;
  // Sequence slots of image positions [B, T] (after the prefix, past the end-of-line tokens before them).
  torch::Tensor image_slots(const torch::Tensor& positions) const;
  // Image embeddings [B, T, D] laid out as entries [B, T'] of nodes `source`, end-of-line where `is_eol`.
  torch::Tensor with_row_ends(const torch::Tensor& images, const torch::Tensor& source, const torch::Tensor& is_eol);
  GptConfig config_;
};
TORCH_MODULE(Gpt);

// Causal [T, T] bool mask (true on and below the diagonal).
torch::Tensor causal_mask(int64_t T, torch::Device device = torch::kCPU);

}  // namespace vispec
