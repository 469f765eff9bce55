// Architecture of the Llama-family image decoder (docs/algorithms.md "The model"): LlamaGen's GPT, and the
// options that make the same model Chameleon's (Lumina-mGPT, Anole), Janus-Pro's or Emu3's.
// Plain data: no torch here, so config parsing and tests need not compile LibTorch headers.
//
// What the families change (docs/model_families.md):
//   conditioning   LlamaGen: a class embedding or a caption MLP over cls_token_num positions. The LLM families
//                  (text_vocab_size > 0): the prefix is text tokens through the token table, left-padded to
//                  cls_token_num positions with the padding hidden.
//   positions      LlamaGen's 2D RoPE over the image grid (interleaved pairs, condition positions all-zero), or
//                  Llama's 1D RoPE over the sequence (half-split pairs, theta rope_base), counted from each
//                  row's first real prefix token.
//   attention      fused wqkv or separate wq/wk/wv; optional qk-norm (Chameleon's LayerNorm over head_dim with
//                  a per-head affine); grouped-query attention without copying K/V.
//   image tokens   in: rows image_token_offset + c of the token table, or Janus's generation embedding and
//                  aligner MLP; out: the LM head's rows of the image tokens (taken once at load), or Janus's
//                  generation head MLP. Either way the model speaks image codes 0 .. vocab_size - 1.
//   layout         a plain raster, or rows ending in an end-of-line token that the model adds itself, so that
//                  decoders still speak image positions 0 .. N-1.
#pragma once

#include <cstdint>
#include <string>

namespace vispec {

enum class RopeKind { grid_2d, sequence_1d };
enum class ImageInput { token_table, aligner_mlp };
enum class ImageOutput { linear, head_mlp };

struct GptConfig {
  int64_t vocab_size = 16384;  // image codebook size: the tokens the model generates
  int64_t dim = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_kv_head = 0;          // 0 = n_head (MHA); every released LlamaGen model is MHA, Emu3 has 8 of 32
  int64_t multiple_of = 256;      // FFN hidden rounded up to this (LlamaGen: 256)
  double ffn_dim_multiplier = 0;  // 0 = none
  int64_t ffn_hidden_size = 0;    // >0: the FFN's hidden width as given (Hugging Face's intermediate_size)
  double rope_base = 10000;
  double norm_eps = 1e-5;
  int64_t grid_size = 16;      // image tokens per side; the sequence holds grid_size^2 image tokens
  int64_t num_classes = 1000;  // class-conditional: row num_classes of the class table is the null class
  int64_t cls_token_num = 1;   // prefix positions before the image (1 for c2i, 120 for t2i, the longest
                               // prompt for the LLM families)
  int64_t caption_dim = 0;     // >0: text-conditional, captions [cls_token_num, caption_dim] projected by an MLP

  RopeKind rope = RopeKind::grid_2d;
  bool fused_qkv = true;           // LlamaGen's wqkv; false: separate wq, wk, wv (the Hugging Face layout)
  bool qk_norm = false;            // Chameleon: LayerNorm (eps 1e-5) of each head's q and k, per-head weight and bias
  int64_t text_vocab_size = 0;     // >0: prompted by text tokens through a token table of this many entries
  int64_t image_token_offset = 0;  // the token id of image code 0 in that table (codes are contiguous)
  ImageInput image_input = ImageInput::token_table;
  ImageOutput image_output = ImageOutput::linear;
  int64_t image_embed_dim = 0;  // Janus: the generation embedding's width (the aligner's input)
  int64_t image_mlp_dim = 0;    // Janus: the aligner's and the generation head's hidden width
  int64_t eol_token = -1;       // >=0: each image row but the last is followed by this token, forced, never
                                // sampled (Lumina-mGPT, Emu3; models/gpt/sequence_layout.h)

  int64_t kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int64_t head_dim() const { return dim / n_head; }
  int64_t image_tokens() const { return grid_size * grid_size; }
  bool row_ends() const { return eol_token >= 0; }
  // The sequence's length: prefix, image tokens and their end-of-line tokens.
  int64_t max_seq_len() const { return cls_token_num + image_tokens() + (row_ends() ? grid_size - 1 : 0); }
  bool text_conditional() const { return caption_dim > 0; }
  bool prompted() const { return text_vocab_size > 0; }
  // The token table's size: the text vocabulary, or the image codebook alone (LlamaGen).
  int64_t token_table_size() const { return prompted() ? text_vocab_size : vocab_size; }
  // LlamaGen: find_multiple(int(2 * 4 * dim / 3) [* multiplier], multiple_of).
  int64_t ffn_hidden() const {
    if (ffn_hidden_size > 0) return ffn_hidden_size;
    int64_t hidden = int64_t(2 * (4 * dim) / 3);
    if (ffn_dim_multiplier > 0) hidden = int64_t(ffn_dim_multiplier * hidden);
    return (hidden + multiple_of - 1) / multiple_of * multiple_of;
  }
};

// LlamaGen's named sizes (gpt.py GPT_B ... GPT_3B); vocab, grid and conditioning are set by the caller.
GptConfig gpt_preset(const std::string& name);

}  // namespace vispec
