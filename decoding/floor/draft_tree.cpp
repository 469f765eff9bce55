#include "decoding/floor/draft_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "core/check.h"
#include "decoding/floor/decode_rows.h"
#include "kernels/fused_ops.h"
#include "kernels/kernel_check.h"

namespace vispec {

std::vector<std::vector<int64_t>> DraftTree::children() const {
  std::vector<std::vector<int64_t>> c(token.size());
  for (int64_t i = 1; i < size(); ++i) c[size_t(parent[size_t(i)])].push_back(i);
  for (auto& list : c)
    std::stable_sort(list.begin(), list.end(),
                     [&](int64_t a, int64_t b) { return score[size_t(a)] > score[size_t(b)]; });
  return c;
}

torch::Tensor tree_masks(const std::vector<DraftTree>& trees, int64_t T) {
  auto mask = torch::eye(T, torch::kBool).unsqueeze(0).repeat({int64_t(trees.size()), 1, 1});
  auto m = mask.accessor<bool, 3>();
  for (size_t b = 0; b < trees.size(); ++b)
    for (int64_t i = 0; i < trees[b].size(); ++i)
      for (int64_t a = trees[b].parent[size_t(i)]; a >= 0; a = trees[b].parent[size_t(a)]) m[int64_t(b)][i][a] = true;
  return mask;
}

TreeTables tree_tables(const std::vector<DraftTree>& trees, int64_t T, torch::Device device, int64_t slots) {
  const int64_t B = int64_t(trees.size());
  std::vector<std::vector<std::vector<int64_t>>> children;
  int64_t C = std::max<int64_t>(1, slots);
  for (const auto& tree : trees) {
    children.push_back(tree.children());
    for (const auto& c : children.back()) C = std::max(C, int64_t(c.size()));
  }
  auto token = torch::zeros({B, T}, torch::kInt64), depth = torch::zeros({B, T}, torch::kInt64);
  auto kids = torch::full({B, T, C}, -1, torch::kInt64);
  auto ta = token.accessor<int64_t, 2>(), da = depth.accessor<int64_t, 2>();
  auto ka = kids.accessor<int64_t, 3>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& tree = trees[size_t(b)];
    for (int64_t i = 0; i < tree.size(); ++i) {
      ta[b][i] = tree.token[size_t(i)];
      da[b][i] = tree.depth[size_t(i)];
      const auto& c = children[size_t(b)][size_t(i)];
      for (size_t j = 0; j < c.size(); ++j) ka[b][i][int64_t(j)] = c[j];
    }
  }
  return {token.to(device), depth.to(device), kids.to(device)};
}

TreeInputs tree_inputs(const std::vector<DraftTree>& trees, const std::vector<int64_t>& root_index, int64_t cells,
                       int64_t T) {
  const int64_t B = int64_t(trees.size());
  for (const auto& t : trees) T = std::max(T, t.size());
  auto tok = torch::zeros({B, T}, torch::kInt64), pos = torch::zeros({B, T}, torch::kInt64);
  auto ta = tok.accessor<int64_t, 2>(), pa = pos.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) {
      const bool real = i < trees[size_t(b)].size();
      ta[b][i] = real ? trees[size_t(b)].token[size_t(i)] : 0;
      pa[b][i] = std::min(cells - 1, root_index[size_t(b)] + (real ? trees[size_t(b)].depth[size_t(i)] : 0));
    }
  return {tok, pos, tree_masks(trees, T)};
}

std::vector<DraftTree> build_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<int64_t>& roots,
                                           const TreeShape& shape, const TreeExpand& expand) {
  return build_dynamic_trees(root_log_probs, roots, std::vector<TreeShape>(size_t(root_log_probs.size(0)), shape),
                             expand);
}

std::vector<DraftTree> build_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<int64_t>& roots,
                                           const std::vector<TreeShape>& shapes, const TreeExpand& expand) {
  return read_trees(grow_dynamic_trees(root_log_probs, shapes, expand), roots);
}

// Every row at once, where the log-probs are: the candidates of each level are one [B, n] block (level 0: the
// root's K children; level l + 1: the K^2 children of level l's frontier). Rows may ask for different shapes
// (ADT-Tree): the blocks are sized by the largest; in a smaller row the candidates beyond its own top_k or
// depth score -inf, so they are expanded with the rest but never chosen.
torch::Tensor tree_shape_table(const std::vector<TreeShape>& shapes) {
  std::vector<int64_t> own_shape;  // per row: top_k, depth, nodes to choose
  for (const auto& s : shapes) {
    VISPEC_ASSERT(s.top_k >= 1 && s.depth >= 0 && s.total_tokens >= 1, "tree shape");
    own_shape.insert(own_shape.end(), {s.top_k, s.depth, s.total_tokens - 1});
  }
  return torch::tensor(own_shape, torch::kInt64).view({int64_t(shapes.size()), 3});
}

TreeCandidates grow_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<TreeShape>& shapes,
                                  const TreeExpand& expand) {
  return grow_dynamic_trees(root_log_probs, shapes, tree_shape_table(shapes).to(root_log_probs.device()), expand);
}

TreeCandidates grow_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<TreeShape>& shapes,
                                  const torch::Tensor& own, const TreeExpand& expand) {
  const int64_t B = root_log_probs.size(0);
  VISPEC_ASSERT(int64_t(shapes.size()) == B && own.size(0) == B && own.size(1) == 3, "tree shapes of ", shapes.size(),
                " rows for ", B);
  int64_t K = 1, D = 0;
  for (const auto& s : shapes) {
    K = std::max(K, s.top_k);
    D = std::max(D, s.depth);
  }
  const auto device = root_log_probs.device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const double kNone = -std::numeric_limits<double>::infinity();
  const auto own_k = own.select(1, 0), own_depth = own.select(1, 1), own_nodes = own.select(1, 2);
  const auto j = torch::arange(K, i64);
  const auto beyond_k = j.view({1, K}).ge(own_k.view({B, 1}));  // [B, K]: slot j is past the row's top_k

  // Level 0: the root's children.
  const auto [lp0, idx0] = root_log_probs.topk(K, -1);
  auto score = lp0.to(torch::kFloat64).masked_fill(beyond_k, kNone);  // [B, K] the newest frontier's scores
  std::vector<torch::Tensor> cand_token{idx0}, cand_parent{torch::full({B, K}, -1, i64)}, cand_score{score};
  auto frontier = j.view({1, K}).expand({B, K});    // candidate index of every frontier node
  auto tokens = idx0;                               // [B, M] their tokens,
  auto parent_slot = torch::full({B, K}, -1, i64);  // their parents' frontier slots,
  auto mask = torch::eye(K, i64.dtype(torch::kBool)).unsqueeze(0).expand({B, K, K});  // their ancestry
  auto expandable = torch::ones({B, K}, i64.dtype(torch::kBool));
  int64_t offset = K;  // candidates so far
  for (int64_t level = 0; level < D; ++level) {
    const int64_t M = K * (level + 1);
    const auto [new_lp, new_idx] = expand(tokens, parent_slot, mask, level).topk(K, -1);  // [B, K, K] each
    // A child's score is its path's summed log-prob; none in a row already as deep as its tree, under a
    // frontier node the row does not expand, or past its top_k.
    auto cu = new_lp.to(torch::kFloat64) + score.unsqueeze(2);
    const auto dead = own_depth.le(level)
                          .view({B, 1, 1})
                          .logical_or(expandable.logical_not().view({B, K, 1}))
                          .logical_or(beyond_k.view({B, 1, K}));
    const auto flat = cu.masked_fill(dead, kNone).reshape({B, K * K});
    const auto child_tokens = new_idx.reshape({B, K * K});
    cand_token.push_back(child_tokens);
    cand_parent.push_back(frontier.narrow(1, M - K, K).unsqueeze(2).expand({B, K, K}).reshape({B, K * K}));
    cand_score.push_back(flat);
    // The next frontier: the K best children (row-wise), each under its parent at frontier slot M - K + i.
    const auto best = std::get<1>(flat.topk(K, -1));  // [B, K]
    const auto slot = best.div(K, "floor") + (M - K);
    frontier = torch::cat({frontier, best + offset}, 1);
    tokens = torch::cat({tokens, child_tokens.gather(1, best)}, 1);
    parent_slot = torch::cat({parent_slot, slot}, 1);
    score = flat.gather(1, best);
    // A new node's ancestry: its parent's, and itself.
    const auto inherited = mask.gather(1, slot.unsqueeze(2).expand({B, K, M}));  // [B, K, M]
    const auto own_rows = torch::cat({inherited, torch::eye(K, mask.options()).unsqueeze(0).expand({B, K, K})}, 2);
    mask = torch::cat({torch::cat({mask, torch::zeros({B, M, K}, mask.options())}, 2), own_rows}, 1);
    expandable = beyond_k.logical_not();  // a frontier wider than the row's top_k: the extras stay candidates
    offset += K * K;
  }

  TreeCandidates c;
  c.top_k = K;
  c.depth = D;
  c.token = torch::cat(cand_token, 1);
  c.parent = torch::cat(cand_parent, 1);
  c.score = torch::cat(cand_score, 1);
  c.nodes = own_nodes;
  return c;
}

torch::Tensor kept_candidates(const TreeCandidates& c) {
  const int64_t B = c.score.size(0), C = c.score.size(1), K = c.top_k;
  const auto order = std::get<1>(c.score.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true));
  const auto rank =
      torch::empty_like(order).scatter_(1, order, torch::arange(C, order.options()).view({1, C}).expand({B, C}));
  auto keep = rank.lt(c.nodes.view({B, 1})).logical_and(c.score.isfinite());
  for (int64_t level = 1, start = K; level <= c.depth; start += K * K, ++level) {
    auto seg = keep.narrow(1, start, K * K);
    seg.logical_and_(keep.gather(1, c.parent.narrow(1, start, K * K)));
  }
  return keep;
}

// A candidate's depth in the tree from its index alone: level 0's K are depth 1, then K^2 per level.
static int64_t candidate_depth(int64_t c, int64_t K) { return c < K ? 1 : (c - K) / (K * K) + 2; }

std::vector<DraftTree> read_trees(const TreeCandidates& candidates, const std::vector<int64_t>& roots) {
  const int64_t B = candidates.token.size(0), C = candidates.token.size(1), K = candidates.top_k;
  // One read: tokens, parents, kept flags and the scores' bits.
  const auto host =
      read_to_host(torch::stack({candidates.token, candidates.parent, kept_candidates(candidates).to(torch::kInt64),
                                 candidates.score.contiguous().view(torch::kInt64)}));
  const auto h = host.accessor<int64_t, 3>();
  std::vector<DraftTree> trees(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    auto& t = trees[size_t(b)];
    t.token = {roots[size_t(b)]};
    t.parent = {-1};
    t.depth = {0};
    t.score = {0.0};
    std::vector<int64_t> node_of(static_cast<size_t>(C), -1);
    for (int64_t c = 0; c < C; ++c) {
      if (!h[2][b][c]) continue;
      const int64_t parent = h[1][b][c];
      node_of[size_t(c)] = t.size();
      t.token.push_back(h[0][b][c]);
      t.parent.push_back(parent < 0 ? 0 : node_of[size_t(parent)]);
      t.depth.push_back(candidate_depth(c, K));
      t.score.push_back(double_from_bits(h[3][b][c]));
    }
  }
  return trees;
}

// read_trees' numbering on the device: a kept candidate's node is 1 + the kept candidates before it (the root is
// node 0), so nodes stay in candidate order and parents precede children. Writes of candidates that are not
// kept go to a spare node T, cut off at the end. A node's children are the kept candidates of its K-block, in
// the block's order (best first, as DraftTree::children() sorts them: a block is one topk's output, and the
// summed scores keep its order).
GrownTrees grown_tree_tables(const TreeCandidates& candidates, const torch::Tensor& roots,
                             const torch::Tensor& root_index, int64_t T, int64_t cells) {
  if (kernels::use_fused(candidates.score.device(), torch::kFloat32)) {
    GrownTrees g;
    std::tie(std::ignore, g.tables.token, g.tables.depth, g.inputs.positions, g.inputs.mask, g.tables.children) =
        kernels::tree_layout(candidates.score, candidates.parent, candidates.token, candidates.nodes, roots, root_index,
                             candidates.top_k, candidates.depth, T, cells);
    g.inputs.tokens = g.tables.token;
    return g;
  }
  const auto keep = kept_candidates(candidates);
  const int64_t B = keep.size(0), C = keep.size(1), K = candidates.top_k;
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(keep.device());
  const auto kept = keep.to(torch::kInt64);
  const auto node_of = torch::where(keep, kept.cumsum(1), T);  // [B, C]
  const auto c = torch::arange(C, i64);
  const auto depth_c = torch::where(c.lt(K), 1, (c - K).div(K * K, "floor") + 2).view({1, C}).expand({B, C});
  const auto parent_node = torch::where(candidates.parent.lt(0), 0,
                                        node_of.gather(1, candidates.parent.clamp_min(0)));  // kept: its parent kept
  auto per_node = [&](const torch::Tensor& first, const torch::Tensor& values) {  // [B, T]: node 0, then the kept
    auto out = torch::zeros({B, T + 1}, i64);
    out.select(1, 0).copy_(first);
    return out.scatter_(1, node_of, values).narrow(1, 0, T);
  };
  GrownTrees g;
  g.tables.token = per_node(roots, candidates.token);
  g.tables.depth = per_node(torch::zeros({B}, i64), depth_c);
  g.inputs.tokens = g.tables.token;
  g.inputs.positions = (root_index.view({B, 1}) + g.tables.depth).clamp_max(cells - 1);
  // Ancestry: node i attends itself and, hop by hop, its parents (the root and padding are their own parents).
  const auto self = torch::arange(T, i64).view({1, T}).expand({B, T});
  const auto parent =
      torch::cat({self, torch::zeros({B, 1}, i64)}, 1).scatter_(1, node_of, parent_node).narrow(1, 0, T);
  auto mask = torch::eye(T, i64.dtype(torch::kBool)).unsqueeze(0).repeat({B, 1, 1});
  auto up = self;
  for (int64_t hop = 0; hop <= candidates.depth; ++hop) {
    up = parent.gather(1, up);
    mask.scatter_(2, up.unsqueeze(2), true);
  }
  g.inputs.mask = mask;
  // Children: slot = rank among the kept candidates of the same K-block.
  const auto slot = kept.view({B, C / K, K}).cumsum(2).view({B, C}) - 1;
  const auto at = torch::where(keep, parent_node * K + slot, T * K);
  g.tables.children =
      torch::full({B, (T + 1) * K}, -1, i64).scatter_(1, at, node_of).view({B, T + 1, K}).narrow(1, 0, T);
  return g;
}

}  // namespace vispec
