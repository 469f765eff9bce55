// Draft trees: the structure every tree decoder verifies, and EAGLE-2's dynamic builder
// (docs/algorithms.md "Draft trees"), written once so that ADT-Tree is only a policy choosing
// (depth, top_k, total_tokens) per step and any acceptance rule walks the same trees.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

#include "decoding/common/sampling_params.h"

namespace vispec {

struct DraftTree {
  // Node 0 is the root (the last committed token, not yet in the target's cache); parents precede children.
  std::vector<int64_t> token, parent, depth;  // parent -1 and depth 0 for the root
  std::vector<double> score;                  // summed drafter log-probs along the path (root 0)

  int64_t size() const { return int64_t(token.size()); }
  // Children of every node, best score first.
  std::vector<std::vector<int64_t>> children() const;
};

// [B, T, T] bool for trees padded to T nodes: node i attends j iff j is i or an ancestor of i (padding nodes
// attend only themselves).
torch::Tensor tree_masks(const std::vector<DraftTree>& trees, int64_t T);

// The target's inputs for verifying every row's tree in one forward: tokens and raster positions [B, T] (a node
// at depth d after a root at raster index r sits at r + d, clamped to the last cell) and tree_masks(); T: the
// largest tree, or `T` if that is more (padding: token 0 at the root's position).
struct TreeInputs {
  torch::Tensor tokens, positions, mask;
};
TreeInputs tree_inputs(const std::vector<DraftTree>& trees, const std::vector<int64_t>& root_index, int64_t cells,
                       int64_t T = 1);

// Every row's tree as tensors on `device`, padded to T nodes, for the batched walk (decoding/common/verify.h):
// token and depth [B, T] (padding: token 0, depth 0), children [B, T, C] each node's children best first, -1 in
// the unused slots (C: the most children any node has, at least `slots`: a decoder that passes its shape's
// top-k gets tables, and walks, of one width whatever trees it drew).
struct TreeTables {
  torch::Tensor token, depth, children;
};
TreeTables tree_tables(const std::vector<DraftTree>& trees, int64_t T, torch::Device device, int64_t slots = 1);

struct TreeShape {
  int64_t depth = 4;          // expansions after the root's children: drafts reach depth + 1 levels
  int64_t top_k = 10;         // children per expanded node, and frontier width
  int64_t total_tokens = 59;  // nodes verified, root included
};

// The drafter as the builder sees it. Given the frontier nodes of levels 0 .. level as one block per row
// (tokens [B, M], parent_slot [B, M]: the block index of each node's parent, -1 for the root's children;
// mask [B, M, M] from their ancestry), returns the drafter's log-probs of the children of the newest level's
// nodes (the last K of the block) [B, K, V]. Earlier levels come first and are the same nodes as in the
// previous call.
using TreeExpand = std::function<torch::Tensor(const torch::Tensor& tokens, const torch::Tensor& parent_slot,
                                               const torch::Tensor& mask, int64_t level)>;

// The K largest of a block of log-probs ([B, ..., K] values, descending, and their indices): what the growth
// reads of each level. A drafter that computes them in one pass (kernels/draft_top_k.h) hands them over as they
// are; TreeExpand's log-probs are cut to them with topk.
struct TopLogProbs {
  torch::Tensor values, indices;
};
// The drafter's K largest guided log-probs from its logits [R, ..., V] ([cond; uncond] rows when guided, mixed by
// params' CFG scale): the processed distribution's log, or at temperature 0 the guided logits' log-softmax (the
// processed distribution is one-hot there and would leave one candidate). One operator (kernels/draft_top_k.h)
// where the fused operators run and the sampler filters nothing (no top-k or top-p), else CFG's mix, the
// sampler's processing, log and topk.
TopLogProbs draft_top_log_probs(const torch::Tensor& logits, bool guided, const SamplingParams& params, int64_t K);
// TreeExpand's form for such a drafter: the K largest of the same log-probs, [B, K, K] each (K: the widest top_k).
using TreeExpandTop = std::function<TopLogProbs(const torch::Tensor& tokens, const torch::Tensor& parent_slot,
                                                const torch::Tensor& mask, int64_t level)>;

// EAGLE-2's trees as they grow on the device: every candidate scored, [B, C] each, C = K + D K^2 (K, D: the
// widest row's top_k and depth) in level order, so parents precede children. Level 0 is the root's K children;
// level l + 1 the K^2 children of level l's frontier, K consecutive candidates per frontier node, best first.
// `parent` is the parent's candidate index (-1: the root), `nodes` [B] the candidates each row keeps at most
// (its total_tokens - 1; which ones: kept_candidates()).
struct TreeCandidates {
  torch::Tensor token, parent, score, nodes;
  int64_t top_k = 1, depth = 0;  // K and D
};

// EAGLE-2's builder for B rows, on the device with no read: root_log_probs [B, V] (the drafter's log-probs
// after the root); top-k at the root, then `depth` expansions keeping the top_k best paths by summed log-prob;
// the trees keep the best total_tokens - 1 of every scored candidate (K + depth K^2 of them: kept_candidates).
// Candidates of log-prob -inf (filtered by top-k/top-p) are never selected; "best" is the stable descending
// sort's order (equal scores by candidate index). One shape per row (ADT-Tree's per-position depth and width).
// Where the fused operators run (kernels/kernel_check.h), each level's scoring and next frontier are one
// operator (kernels::grow_level, the same outputs); else the composite formulas, some 25 operators a level.
TreeCandidates grow_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<TreeShape>& shapes,
                                  const TreeExpand& expand);
// The same with the shapes also on the device, own_shapes = tree_shape_table(shapes) there, so that nothing is
// uploaded (an iteration replayed as a graph).
TreeCandidates grow_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<TreeShape>& shapes,
                                  const torch::Tensor& own_shapes, const TreeExpand& expand);
// The same from the root's K largest log-probs [B, K] and a drafter that gives its own (the others take these
// through topk).
TreeCandidates grow_dynamic_trees(const TopLogProbs& root, const std::vector<TreeShape>& shapes,
                                  const torch::Tensor& own_shapes, const TreeExpandTop& expand);
// Each row's top_k, depth and nodes to choose (total_tokens - 1): [B, 3] int64 on the CPU.
torch::Tensor tree_shape_table(const std::vector<TreeShape>& shapes);

// The rerank: [B, C] bool, whether each candidate is in its row's tree: the row's best `nodes` finite
// candidates (ties in candidate order), then, level by level, none whose parent was cut (it lost a tie at the
// cut: a node without its path is unverifiable). The composite formulas; grown_tree_tables() runs it fused.
torch::Tensor kept_candidates(const TreeCandidates& candidates);

// The grown trees as the target's inputs and the walk's tables, built on the device from the candidates
// (nothing read, nothing uploaded), padded to T nodes: T at least 1 + the most candidates a row keeps.
// roots and root_index [B] int64 on the device: each row's newest token and its raster index. Equal to
// tree_inputs() and tree_tables(..., slots = K) of read_trees() padded to T. Where the fused operators run
// (kernels/kernel_check.h), the rerank and the layout are one of them (kernels::tree_layout, the same outputs);
// else the composite formulas, some 85 operators.
struct GrownTrees {
  TreeInputs inputs;
  TreeTables tables;
};
GrownTrees grown_tree_tables(const TreeCandidates& candidates, const torch::Tensor& roots,
                             const torch::Tensor& root_index, int64_t T, int64_t cells);

// The grown trees on the host (one read), for tests and any decoder that looks at its trees there.
std::vector<DraftTree> read_trees(const TreeCandidates& candidates, const std::vector<int64_t>& roots);

// grow_dynamic_trees then read_trees.
std::vector<DraftTree> build_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<int64_t>& roots,
                                           const TreeShape& shape, const TreeExpand& expand);
std::vector<DraftTree> build_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<int64_t>& roots,
                                           const std::vector<TreeShape>& shapes, const TreeExpand& expand);

}  // namespace vispec
