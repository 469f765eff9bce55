// The fused operators of a decode step: each is one LibTorch operator (registered as vispec::NAME, so the
// dispatcher, the profiler and core/op_counter.h see one call) with a CPU implementation that is its
// reference (kernels/fused_ops_cpu.cpp: plain loops, float arithmetic) and, in a CUDA build, a CUDA kernel
// (kernels/fused_ops.cu) held against that reference before its first use (kernels/kernel_check.h).
//
// They replace, in a transformer layer of a decode step, the 40-odd small ATen operators of the composite
// formulas (models/gpt/layers.cpp, models/rope_*.cpp, models/gpt/gpt.cpp): an RMSNorm was 8 of them, the RoPE of q
// and k 17 each plus the cache writes. A layer is then nine operators (docs/decoding_floor.md, "Fused
// operators"). The composite formulas stay: they are what training differentiates (these operators have no
// gradient) and the CUDA path's fallback.
//
// Shapes: B rows, T block entries, D model width, H query heads, Hkv key/value heads, Dh head width, S cache
// slots. Dtypes: float32, bfloat16 or float16 activations; statistics and rotations in float32.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// RMSNorm: x * rsqrt(mean(x^2) + eps) in float32, rounded to x's dtype, then times weight (in x's dtype).
// x [..., D], weight [D].
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// The residual add and the next RMSNorm in one pass: returns (x + delta, rms_norm(x + delta)), the sum
// rounded to x's dtype first (what the unfused code computes). x, delta [..., D].
std::tuple<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                                                double eps);

// SwiGLU's middle: silu(gate) * up over one merged projection gate_up [..., 2F] = [w1 x | w3 x] -> [..., F].
at::Tensor silu_mul(const at::Tensor& gate_up);

// RoPE of q and k and the cache write, from one merged projection qkv [B, T, (H + 2 Hkv) Dh]: rotates q and k
// by rope [B, T, Dh/2, 2] (cos, sin; float32), stores k and v at slots [B, T] (int64) of the layer's caches
// k_cache, v_cache [B, Hkv, S, Dh] (in their dtype) and returns q rotated, [B, H, T, Dh] contiguous.
// half_split: 1D RoPE's halves (x[i], x[i + Dh/2]) rotate together; else 2D RoPE's neighbours (x[2i], x[2i+1]).
at::Tensor rope_write_kv(const at::Tensor& qkv, const at::Tensor& rope, const at::Tensor& k_cache,
                         const at::Tensor& v_cache, const at::Tensor& slots, int64_t n_head, int64_t n_kv_head,
                         bool half_split);

// A linear layer without bias, x [..., K] times weight [N, K] transposed -> [..., N]: at::linear, except on
// CUDA for at most 4 rows, where a kernel of its own reads the weights at the memory bandwidth that cuBLAS's
// kernels for so few rows do not reach (kernels/linear_rows.cu).
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight);

// SwiGLU's middle from x: silu_mul(linear(x, weight)), weight [2F, K] the merged [w1; w3] -> [..., F]. On CUDA
// for at most 4 rows one kernel computes both products and the gate (kernels/linear_rows.cu), with the same
// bits as the two operators; elsewhere it is those two.
at::Tensor linear_silu_mul(const at::Tensor& x, const at::Tensor& weight);

// Attention over the first `keys` slots of a layer's caches: q [B, H, T, Dh], caches [B, Hkv, S, Dh], mask
// [B or 1, 1, T, keys] bool (true = may attend) or none (then `causal` within the block, or every key).
// Returns [B, T, H Dh], the layout the output projection reads. One operator whatever runs inside it.
at::Tensor attend_cache(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache, int64_t keys,
                        const std::optional<at::Tensor>& mask, bool causal);

// The sampling chain of decoding/floor/sampler.h for one step, in one pass per row: logits [B, V] float32 (CFG
// already mixed) -> temperature -> top-k -> top-p -> softmax -> the inverse-CDF draw with the uniforms u [B]
// float64 (float64 CDF) -> tokens [B] int64; temperature 0 takes the argmax. Any non-finite logit ORs true into
// the 0-dim bool `nonfinite` (decoding/floor/sampler.h's watch).
at::Tensor sample_next(const at::Tensor& logits, const at::Tensor& u, double temperature, int64_t top_k, double top_p,
                       const at::Tensor& nonfinite);

// Classifier-free guidance: logits [2B, ...] laid out [cond; uncond] (float32, bfloat16 or float16) -> float32
// [B, ...], u + scale (c - u) with c and u in float32 and the scale rounded to float32, as the composite
// formula (decoding/floor/sampler.h's cfg_combine) computes it, bit for bit.
at::Tensor cfg_mix(const at::Tensor& logits, double scale);

// The samplers' non-finite watch (decoding/floor/sampler.h): ORs true into the 0-dim bool `flag` (on x's device)
// where any value of x (float32, bfloat16 or float16) is NaN or infinite, and leaves it as it is otherwise. One
// pass, where the composite formula (isfinite, logical_not, any, logical_or_) is four kernels.
void note_nonfinite(const at::Tensor& x, const at::Tensor& flag);

// The keyed uniforms of core/rng.h for tensors of keys, on their device: sample_ids [B] int64, positions
// [B, C] int64, draws [B, C] int64 or none (draw 0) -> float64 [B, C], element (b, c) being
// uniform(RngKey{seed, sample_ids[b]}, positions[b][c], purpose, draws[b][c]) bit for bit (core/philox.h's
// body on both backends). seed holds the uint64 seed's bits. Callers use kernels/keyed_uniforms.h.
at::Tensor keyed_uniforms(const at::Tensor& sample_ids, const at::Tensor& positions,
                          const std::optional<at::Tensor>& draws, int64_t seed, int64_t purpose);

// The verification unit's tree walk (decoding/floor/verify.h: verify_tree with the target's distributions p [B, T, V]
// float32 or float64, verify_tree_greedy with its argmax `target` [B, T]; exactly one is given) for every row
// at once: one CUDA block per row, kernels/tree_walk_body.h the one body of both backends. The tree: token,
// depth [B, T], children [B, T, C] int64; node_q [B, S, V] (p's dtype) and q_slot [B, T]: EAGLE-1's drafter
// q at the expanded nodes, else none (one-hot q at each child); the rule (acceptance_params.h's AcceptRule
// as an int) with LANTERN's neighbour table [codes, >= k] int64 and k, delta, lambda, optimal resampling, or
// Cool-SD's weights [B, >= 1] float64 (w at depth 1, 2, ... of each row's draft length); limit [B] int64 the
// drafts each row may accept; the uniforms u_accept [B, levels, C], u_resample and u_sample [B, levels + 1]
// float64 (a greedy walk reads only Cool-SD's u_accept). Returns (path [B, levels + 2], accepted [B],
// next [B], sampled [B] bool, tried [B]): TreeVerdict's fields.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> tree_walk(
    const std::optional<at::Tensor>& p, const std::optional<at::Tensor>& target, const at::Tensor& token,
    const at::Tensor& depth, const at::Tensor& children, const std::optional<at::Tensor>& node_q,
    const std::optional<at::Tensor>& q_slot, const std::optional<at::Tensor>& neighbours,
    const std::optional<at::Tensor>& weights, const at::Tensor& limit, const std::optional<at::Tensor>& u_accept,
    const std::optional<at::Tensor>& u_resample, const std::optional<at::Tensor>& u_sample, int64_t levels,
    int64_t rule, int64_t k, double delta, double lambda, bool optimal);

// EAGLE-2's grown trees laid out for verification (decoding/floor/draft_tree.h: grow_dynamic_trees' rerank and
// grown_tree_tables) for every row at once: one CUDA block per row, kernels/tree_layout_body.h the one body of
// both backends, which only compares and counts, so its outputs are the composite formulas' exactly. The
// candidates score [B, C] float64, parent and token [B, C] int64, C = top_k + depth top_k^2 in level order;
// nodes [B] the candidates each row keeps at most; roots, root_index [B] each row's root token and raster index.
// Returns (keep [B, C] bool, token, depth, positions [B, T] int64, mask [B, T, T] bool, children [B, T, top_k]
// int64): the kept candidates, then TreeInputs' and TreeTables' fields padded to T nodes, positions at most
// cells - 1.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> tree_layout(
    const at::Tensor& score, const at::Tensor& parent, const at::Tensor& token, const at::Tensor& nodes,
    const at::Tensor& roots, const at::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T, int64_t cells);

// One step of EAGLE-2's tree growth (decoding/floor/draft_tree.h's grow_dynamic_trees) for every row at once, in
// place in the growth's buffers (kernels/tree_growth_body.h says what each holds): level -1 starts them from the
// root's top-K log-probs lp and tokens idx [B, K]; level l >= 0 scores the children of level l's frontier (lp,
// idx [B, K, K]: the drafter's top K under each frontier node; lp float32 or float64) and picks the next
// frontier. own [B, 3] int64: each row's top_k, depth and nodes. One CUDA block per row; the composite formulas'
// outputs exactly.
void grow_level(const at::Tensor& lp, const at::Tensor& idx, const at::Tensor& own, const at::Tensor& score,
                const at::Tensor& cand_token, const at::Tensor& cand_parent, const at::Tensor& cand_score,
                const at::Tensor& frontier, const at::Tensor& tokens, const at::Tensor& parent_slot,
                const at::Tensor& mask, int64_t level);

// EAGLE-1's n draws without replacement from each row of q [B, M, V] (probabilities, float32 or float64) by
// inverse CDF with the uniforms u [B, M, n] float64 (decoding/eagle1.h's draw_without_replacement): returns the
// tokens [B, M, n] int64 and each draw's conditional probability [B, M, n] float64. One CUDA block per row of q;
// sums in the tree walk's order (kernels/draws_body.h), so a token may differ from the composite formula's where
// a uniform falls within a rounding of a boundary.
std::tuple<at::Tensor, at::Tensor> draw_without_replacement(const at::Tensor& q, const at::Tensor& u);

}  // namespace vispec::kernels
