// Architecture of the VQ image tokenizer in LlamaGen's style (docs/algorithms.md "The model"). Plain data.
// Chameleon's VQGAN (Lumina-mGPT, Anole) is the same taming-transformers network with no attention in the
// levels (attn_resolutions []) and no L2 normalisation: level_attention false, codebook_l2_norm false.
// Emu3's MoVQ (kind movq, models/vq/movq.h) is another decoder over the same fields: spatial norms conditioned on
// the code vectors, a time axis of temporal_downsample frames (frame 0 is the image), no encoder here.
#pragma once

#include <cstdint>
#include <vector>

namespace vispec {

enum class VqKind { taming, movq };

struct VqConfig {
  VqKind kind = VqKind::taming;     // taming: LlamaGen's and Chameleon's VQ; movq: Emu3's (decoder only)
  int64_t temporal_downsample = 4;  // movq: frames per latent frame (Emu3: 4)
  int64_t codebook_size = 16384;
  int64_t codebook_embed_dim = 8;
  bool codebook_l2_norm = true;  // LlamaGen normalises codes and latents before lookup
  double commit_beta = 0.25;     // weight of the commitment loss (training only)
  int64_t in_channels = 3;       // image channels (1 for Fashion-MNIST)
  int64_t z_channels = 256;
  int64_t ch = 128;
  std::vector<int64_t> ch_mult = {1, 1, 2, 2, 4};  // one level per entry; all but the last down-sample x2
  int64_t num_res_blocks = 2;
  int64_t norm_groups = 32;     // GroupNorm groups (eps 1e-6)
  bool level_attention = true;  // LlamaGen: attention after each block of the lowest-resolution level

  int64_t downsample() const { return int64_t(1) << (ch_mult.size() - 1); }
};

}  // namespace vispec
