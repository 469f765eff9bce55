// Architecture of the Llama-family image decoder (LlamaGen's GPT; docs/algorithms.md "The model").
// Plain data: no torch here, so config parsing and tests need not compile LibTorch headers.
#pragma once

#include <cstdint>
#include <string>

namespace vispec {

struct GptConfig {
  int64_t vocab_size = 16384;   // image codebook size
  int64_t dim = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_kv_head = 0;        // 0 = n_head (MHA); every released LlamaGen model is MHA
  int64_t multiple_of = 256;    // FFN hidden rounded up to this (LlamaGen: 256)
  double ffn_dim_multiplier = 0;  // 0 = none
  double rope_base = 10000;
  double norm_eps = 1e-5;
  int64_t grid_size = 16;       // image tokens per side; the sequence holds grid_size^2 image tokens
  int64_t num_classes = 1000;   // class-conditional: row num_classes of the class table is the null class
  int64_t cls_token_num = 1;    // condition positions before the image (1 for c2i, 120 for t2i)
  int64_t caption_dim = 0;      // >0: text-conditional, captions [cls_token_num, caption_dim] projected by an MLP

  int64_t kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int64_t head_dim() const { return dim / n_head; }
  int64_t image_tokens() const { return grid_size * grid_size; }
  int64_t max_seq_len() const { return cls_token_num + image_tokens(); }
  bool text_conditional() const { return caption_dim > 0; }
  // LlamaGen: find_multiple(int(2 * 4 * dim / 3) [* multiplier], multiple_of).
  int64_t ffn_hidden() const {
    int64_t hidden = int64_t(2 * (4 * dim) / 3);
    if (ffn_dim_multiplier > 0) hidden = int64_t(ffn_dim_multiplier * hidden);
    return (hidden + multiple_of - 1) / multiple_of * multiple_of;
  }
};

// LlamaGen's named sizes (gpt.py GPT_B ... GPT_3B); vocab, grid and conditioning are set by the caller.
GptConfig gpt_preset(const std::string& name);

}  // namespace vispec
