// Llama's 1D rotary position embedding, as the Hugging Face models of the LLM families apply it (Chameleon,
// Janus-Pro's language model, Emu3): pair j rotates dimensions j and j + head_dim/2 ("rotate_half", the layout
// their converted checkpoints are permuted for) by position * base^(-2j/head_dim).
//
// The angles are computed as Hugging Face computes them, in float32 (inverse frequencies in float32, times the
// position in float32), so long sequences (Emu3: 8,000 positions, theta 1e6) round the same way.
#pragma once

#include <torch/torch.h>

namespace vispec {

// [positions, head_dim/2, 2] float32 (cos, sin) for positions 0 .. positions - 1: the layout of rope_2d_table,
// so the model gathers either by position.
torch::Tensor rope_1d_table(int64_t positions, int64_t head_dim, double base);

// x [B, T, H, Dh]; table_rows [B, T, Dh/2, 2]. Rotation in float32, result cast back to x's dtype.
torch::Tensor apply_rope_half_split(const torch::Tensor& x, const torch::Tensor& table_rows);

}  // namespace vispec
