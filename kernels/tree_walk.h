// The verification unit's tree walk as one operator (vispec::tree_walk) for every row at once: one CUDA block per
// row (kernels/tree_walk.cu), kernels/tree_walk_body.h the one body of both backends, so the CPU reference
// (kernels/tree_walk.cpp) and the kernel agree bit for bit. The composite is the verification itself
// (decoding/common/verify.cpp chooses between them).
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// The walk of decoding/common/verify.h (verify_tree with the target's distributions p [B, T, V] float32 or
// float64, verify_tree_greedy with its argmax `target` [B, T]; exactly one is given) for every row. The tree: token,
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

}  // namespace vispec::kernels
