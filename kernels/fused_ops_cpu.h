// The CPU implementations of kernels/fused_ops.h: the reference each CUDA kernel is held against. Plain loops
// over rows, float32 arithmetic, rows spread over LibTorch's threads. Registered by kernels/fused_ops.cpp.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <tuple>

namespace vispec::kernels::cpu {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);
std::tuple<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x, const torch::Tensor& delta,
                                                      const torch::Tensor& weight, double eps);
torch::Tensor silu_mul(const torch::Tensor& gate_up);
torch::Tensor rope_write_kv(const torch::Tensor& qkv, const torch::Tensor& rope, const torch::Tensor& k_cache,
                            const torch::Tensor& v_cache, const torch::Tensor& slots, int64_t n_head, int64_t n_kv_head,
                            bool half_split);
torch::Tensor sample_next(const torch::Tensor& logits, const torch::Tensor& u, double temperature, int64_t top_k,
                          double top_p, const torch::Tensor& nonfinite);

// linear on every backend (the CPU's, and CUDA's reference and fallback): at::linear without bias.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight);

// linear_silu_mul on the CPU: silu_mul(linear(x, weight)).
torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& weight);

// attend_cache on every backend (the CPU's, and CUDA's reference and fallback): LibTorch's fused attention over
// a narrowed view of the caches, its output laid out for the output projection.
torch::Tensor attend_cache(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                           int64_t keys, const std::optional<torch::Tensor>& mask, bool causal);

// The shape checks every implementation makes before it touches memory (one message per mistake).
void check_rope_write_kv(const torch::Tensor& qkv, const torch::Tensor& rope, const torch::Tensor& k_cache,
                         const torch::Tensor& v_cache, const torch::Tensor& slots, int64_t n_head, int64_t n_kv_head);
void check_sample_next(const torch::Tensor& logits, const torch::Tensor& u, const torch::Tensor& nonfinite);

torch::Tensor cfg_mix(const torch::Tensor& logits, double scale);
void check_cfg_mix(const torch::Tensor& logits);
void note_nonfinite(const torch::Tensor& x, const torch::Tensor& flag);
void check_note_nonfinite(const torch::Tensor& x, const torch::Tensor& flag);
torch::Tensor keyed_uniforms(const torch::Tensor& sample_ids, const torch::Tensor& positions,
                             const std::optional<torch::Tensor>& draws, int64_t seed, int64_t purpose);
void check_keyed_uniforms(const torch::Tensor& sample_ids, const torch::Tensor& positions,
                          const std::optional<torch::Tensor>& draws);

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_walk(
    const std::optional<torch::Tensor>& p, const std::optional<torch::Tensor>& target, const torch::Tensor& token,
    const torch::Tensor& depth, const torch::Tensor& children, const std::optional<torch::Tensor>& node_q,
    const std::optional<torch::Tensor>& q_slot, const std::optional<torch::Tensor>& neighbours,
    const std::optional<torch::Tensor>& weights, const torch::Tensor& limit,
    const std::optional<torch::Tensor>& u_accept, const std::optional<torch::Tensor>& u_resample,
    const std::optional<torch::Tensor>& u_sample, int64_t levels, int64_t rule, int64_t k, double delta, double lambda,
    bool optimal);

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_layout(
    const torch::Tensor& score, const torch::Tensor& parent, const torch::Tensor& token, const torch::Tensor& nodes,
    const torch::Tensor& roots, const torch::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T,
    int64_t cells);
void grow_level(const torch::Tensor& lp, const torch::Tensor& idx, const torch::Tensor& own, const torch::Tensor& score,
                const torch::Tensor& cand_token, const torch::Tensor& cand_parent, const torch::Tensor& cand_score,
                const torch::Tensor& frontier, const torch::Tensor& tokens, const torch::Tensor& parent_slot,
                const torch::Tensor& mask, int64_t level);
std::tuple<torch::Tensor, torch::Tensor> draw_without_replacement(const torch::Tensor& q, const torch::Tensor& u);

}  // namespace vispec::kernels::cpu
