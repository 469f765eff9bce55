// What the queries of one forward may attend to. Most forwards need no mask tensor: a step whose queries may
// see every key (an AR step: one query per row, rows of equal length, nothing hidden), or a causal forward
// over a whole sequence with nothing before it (teacher forcing, a prefill). Those run LibTorch's fused
// attention without a mask, so it may pick its fastest kernel (on a GPU, flash attention takes no mask at
// all); the rest (draft chains and trees after a cached prefix, rows of different lengths, hidden caption
// padding) carry the dense [B or 1, 1, T, S] mask.
#pragma once

#include <torch/torch.h>

namespace vispec {

struct AttentionMask {
  torch::Tensor dense;  // [B or 1, 1, T, S] bool, true = may attend; undefined: `causal` says which
  bool causal = false;  // without `dense`: causal within the block (T == S) if set, else every key

  static AttentionMask every_key() { return {}; }
  static AttentionMask causal_block() { return {torch::Tensor(), true}; }
};

// softmax(q k^T / sqrt(Dh) + mask) v by LibTorch's fused attention. q [B, H, T, Dh], k/v [B, Hkv, S, Dh]: with
// fewer K/V heads (grouped-query attention) each serves H / Hkv query heads, read in place, never copied.
inline torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const AttentionMask& mask) {
  const bool grouped = k.size(1) != q.size(1);
  if (mask.dense.defined()) return at::scaled_dot_product_attention(q, k, v, mask.dense, 0.0, false, {}, grouped);
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, mask.causal, {}, grouped);
}

}  // namespace vispec
