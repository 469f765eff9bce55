// T5's encoder (what LlamaGen's text-to-image models read captions with: flan-T5-XL), computing what Hugging
// Face's T5EncoderModel computes, with its parameter names, so its checkpoints load unchanged:
//   embed (shared) -> num_layers x [x += SelfAttention(layer_norm x); x += DenseReluDense(layer_norm x)]
//   -> final_layer_norm.
// T5's own choices, each unlike the Llama-family GPT beside it: attention scores are NOT scaled by
// 1/sqrt(d_kv); positions enter only as a learned bias per (head, relative-position bucket), computed by the
// first layer and added in every layer; the feed-forward is gated (wi_0 through the activation, times wi_1)
// in flan-T5; the norm is an RMS norm without a mean or bias (the GPT's RMSNorm). No biases anywhere.
#pragma once

#include <torch/torch.h>

#include "models/gpt/gpt.h"
#include "models/text/t5_config.h"

namespace vispec {

// Bucket of each relative position (key - query) for a bidirectional encoder: half the buckets for each sign,
// half of those exact for small distances, the rest logarithmic up to max_distance.
torch::Tensor t5_relative_buckets(const torch::Tensor& relative_position, int64_t num_buckets, int64_t max_distance);

struct T5AttentionImpl : torch::nn::Module {
  T5AttentionImpl(const T5Config& c, bool relative_bias, const torch::TensorOptions& options);
  // x [B, L, d_model]; bias [1 or B, H, L, L] float32 (positions plus the padding mask).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& bias);
  // The position bias of L positions, [1, H, L, L] float32 (only the first layer has the table).
  torch::Tensor position_bias(int64_t L);
  NoBiasLinear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  EmbeddingTable relative_attention_bias{nullptr};
  int64_t heads, d_kv, num_buckets, max_distance;
};
TORCH_MODULE(T5Attention);

struct T5FeedForwardImpl : torch::nn::Module {
  T5FeedForwardImpl(const T5Config& c, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  NoBiasLinear wi{nullptr}, wi_0{nullptr}, wi_1{nullptr}, wo{nullptr};  // wi (ungated) or wi_0 / wi_1 (gated)
  std::string activation;
};
TORCH_MODULE(T5FeedForward);

// One encoder block: "layer.0" = {SelfAttention, layer_norm}, "layer.1" = {DenseReluDense, layer_norm}.
struct T5BlockImpl : torch::nn::Module {
  T5BlockImpl(const T5Config& c, bool relative_bias, const torch::TensorOptions& options);
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& bias);
  T5Attention attention{nullptr};
  T5FeedForward feed_forward{nullptr};
  RMSNorm attention_norm{nullptr}, ffn_norm{nullptr};
};
TORCH_MODULE(T5Block);

class T5EncoderImpl : public torch::nn::Module {
 public:
  explicit T5EncoderImpl(const T5Config& config, const torch::TensorOptions& options = {});
  const T5Config& config() const { return config_; }
  // ids [B, L] int64, mask [B, L] (true = a token; undefined = all) -> last hidden states [B, L, d_model].
  // Padded keys are masked out of every query's attention, so a token's output does not depend on padding.
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& mask = {});

  EmbeddingTable shared{nullptr};
  torch::nn::ModuleList blocks{nullptr};  // registered as encoder.block
  RMSNorm final_layer_norm{nullptr};

 private:
  T5Config config_;
};
TORCH_MODULE(T5Encoder);

// File tensors a T5 checkpoint may hold that the encoder does not use: a whole T5ForConditionalGeneration's
// decoder and head, and the encoder's tied copy of the shared embedding.
const std::vector<std::string>& t5_encoder_ignored_prefixes();

}  // namespace vispec
