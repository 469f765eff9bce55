// The architecture of a T5 encoder (flan-T5 and T5 v1.1, what LlamaGen's text-to-image models read captions
// with), as Hugging Face's config.json for T5 describes it. Plain data: no torch.
#pragma once

#include <cstdint>
#include <string>

namespace vispec {

struct T5Config {
  int64_t vocab_size = 32128;
  int64_t d_model = 2048;
  int64_t d_kv = 64;  // per-head width (inner width = num_heads * d_kv, not always d_model)
  int64_t d_ff = 5120;
  int64_t num_layers = 24;  // encoder layers
  int64_t num_heads = 32;
  int64_t num_buckets = 32;             // relative_attention_num_buckets
  int64_t max_distance = 128;           // relative_attention_max_distance
  double eps = 1e-6;                    // layer_norm_epsilon
  bool gated = true;                    // feed_forward_proj "gated-gelu" (flan-T5) vs "relu" (original T5)
  std::string activation = "gelu_new";  // gelu_new (tanh approximation) | gelu | relu | silu
};

// Reads config.json; throws an Error naming the file and the field on anything missing or unsupported.
T5Config read_t5_config(const std::string& path);

}  // namespace vispec
