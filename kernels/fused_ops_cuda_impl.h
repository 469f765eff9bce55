// The CUDA implementations of the fused operators as LibTorch kernels (kernels/fused_ops_cuda.cpp), for
// kernels/fused_ops.cpp to register. Built only where nvcc compiled kernels/fused_ops.cu (VISPEC_CUDA_KERNELS).
#pragma once

#include <torch/torch.h>

#include <optional>
#include <tuple>

namespace vispec::kernels::cuda {

torch::Tensor rms_norm_cuda(const torch::Tensor& x, const torch::Tensor& weight, double eps);
std::tuple<torch::Tensor, torch::Tensor> add_rms_norm_cuda(const torch::Tensor& x, const torch::Tensor& delta,
                                                           const torch::Tensor& weight, double eps);
torch::Tensor silu_mul_cuda(const torch::Tensor& gate_up);
torch::Tensor rope_write_kv_cuda(const torch::Tensor& qkv, const torch::Tensor& rope, const torch::Tensor& k_cache,
                                 const torch::Tensor& v_cache, const torch::Tensor& slots, int64_t n_head,
                                 int64_t n_kv_head, bool half_split);
torch::Tensor sample_next_cuda(const torch::Tensor& logits, const torch::Tensor& u, double temperature, int64_t top_k,
                               double top_p, const torch::Tensor& nonfinite);

// linear's kernel for at most 4 rows of aligned, contiguous operands of one dtype, else at::linear.
torch::Tensor linear_cuda(const torch::Tensor& x, const torch::Tensor& weight);

// linear_silu_mul's kernel under linear's conditions, else linear_cuda then silu_mul_cuda.
torch::Tensor linear_silu_mul_cuda(const torch::Tensor& x, const torch::Tensor& weight);

// attend_cache's kernel where it applies (a mask or every key, a supported head width, aligned caches of the
// query's dtype), else the composite (kernels/fused_ops_cpu.h's attend_cache).
torch::Tensor attend_cache_cuda(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                                int64_t keys, const std::optional<torch::Tensor>& mask, bool causal);

torch::Tensor cfg_mix_cuda(const torch::Tensor& logits, double scale);
void note_nonfinite_cuda(const torch::Tensor& x, const torch::Tensor& flag);
torch::Tensor keyed_uniforms_cuda(const torch::Tensor& sample_ids, const torch::Tensor& positions,
                                  const std::optional<torch::Tensor>& draws, int64_t seed, int64_t purpose);

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_walk_cuda(
    const std::optional<torch::Tensor>& p, const std::optional<torch::Tensor>& target, const torch::Tensor& token,
    const torch::Tensor& depth, const torch::Tensor& children, const std::optional<torch::Tensor>& node_q,
    const std::optional<torch::Tensor>& q_slot, const std::optional<torch::Tensor>& neighbours,
    const std::optional<torch::Tensor>& weights, const torch::Tensor& limit,
    const std::optional<torch::Tensor>& u_accept, const std::optional<torch::Tensor>& u_resample,
    const std::optional<torch::Tensor>& u_sample, int64_t levels, int64_t rule, int64_t k, double delta, double lambda,
    bool optimal);

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_layout_cuda(
    const torch::Tensor& score, const torch::Tensor& parent, const torch::Tensor& token, const torch::Tensor& nodes,
    const torch::Tensor& roots, const torch::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T,
    int64_t cells);
void grow_level_cuda(const torch::Tensor& lp, const torch::Tensor& idx, const torch::Tensor& own,
                     const torch::Tensor& score, const torch::Tensor& cand_token, const torch::Tensor& cand_parent,
                     const torch::Tensor& cand_score, const torch::Tensor& frontier, const torch::Tensor& tokens,
                     const torch::Tensor& parent_slot, const torch::Tensor& mask, int64_t level);
std::tuple<torch::Tensor, torch::Tensor> draw_without_replacement_cuda(const torch::Tensor& q, const torch::Tensor& u);

}  // namespace vispec::kernels::cuda
