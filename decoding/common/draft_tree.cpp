#include "decoding/common/draft_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "core/check.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/sampler.h"
#include "kernels/draft_top_k.h"
#include "kernels/grow_level.h"
#include "kernels/kernel_check.h"
#include "kernels/tree_layout.h"
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

namespace {

// The growth's buffers (kernels/grow_level_body.h says what each holds), made once per tree.
struct Growth {
  torch::Tensor score, cand_token, cand_parent, cand_score, frontier, tokens, parent_slot, mask;
};

// One step of the growth in the composite formulas, as kernels::grow_level computes it (its reference, and what
// runs where the fused operators do not): level -1 the root's K children, level l >= 0 the children of level
// l's frontier and the next frontier.
void grow_level_composite(const torch::Tensor& lp, const torch::Tensor& idx, const torch::Tensor& own, Growth& g,
                          int64_t level) {
  const int64_t B = g.score.size(0), K = g.score.size(1);
  const double kNone = -std::numeric_limits<double>::infinity();
  const auto own_k = own.select(1, 0), own_depth = own.select(1, 1);
  const auto j = torch::arange(K, idx.options());
  const auto beyond_k = j.view({1, K}).ge(own_k.view({B, 1}));  // [B, K]: slot j is past the row's top_k
  const auto eye = torch::eye(K, g.mask.options()).unsqueeze(0).expand({B, K, K});
  if (level < 0) {
    const auto s = lp.to(torch::kFloat64).masked_fill(beyond_k, kNone);
    g.cand_token.narrow(1, 0, K).copy_(idx);
    g.tokens.narrow(1, 0, K).copy_(idx);
    g.cand_parent.narrow(1, 0, K).fill_(-1);
    g.parent_slot.narrow(1, 0, K).fill_(-1);
    g.cand_score.narrow(1, 0, K).copy_(s);
    g.score.copy_(s);
    g.frontier.narrow(1, 0, K).copy_(j.view({1, K}).expand({B, K}));
    g.mask.zero_();
    g.mask.narrow(1, 0, K).narrow(2, 0, K).copy_(eye);
    return;
  }
  const int64_t M = K * (level + 1), off = K + level * K * K;
  // A child's score is its path's summed log-prob; none in a row already as deep as its tree, past its top_k,
  // or (from level 1 on) under a frontier node past the row's top_k: those extras stay candidates, unexpanded.
  auto dead = own_depth.le(level).view({B, 1, 1}).logical_or(beyond_k.view({B, 1, K}));
  if (level > 0) dead = dead.logical_or(beyond_k.view({B, K, 1}));
  const auto flat = (lp.to(torch::kFloat64) + g.score.unsqueeze(2)).masked_fill(dead, kNone).reshape({B, K * K});
  const auto child_tokens = idx.reshape({B, K * K});
  g.cand_score.narrow(1, off, K * K).copy_(flat);
  g.cand_token.narrow(1, off, K * K).copy_(child_tokens);
  g.cand_parent.narrow(1, off, K * K)
      .copy_(g.frontier.narrow(1, M - K, K).unsqueeze(2).expand({B, K, K}).reshape({B, K * K}));
  // The next frontier: the K best children in the stable sort's order, each under its parent at frontier slot
  // M - K + i; a new node's ancestry is its parent's, and itself.
  const auto best = std::get<1>(flat.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true)).narrow(1, 0, K);
  const auto slot = best.div(K, "floor") + (M - K);
  g.frontier.narrow(1, M, K).copy_(best + off);
  g.tokens.narrow(1, M, K).copy_(child_tokens.gather(1, best));
  g.parent_slot.narrow(1, M, K).copy_(slot);
  g.score.copy_(flat.gather(1, best));
  const auto seen = g.mask.narrow(1, 0, M).narrow(2, 0, M);
  g.mask.narrow(1, M, K).narrow(2, 0, M).copy_(seen.gather(1, slot.unsqueeze(2).expand({B, K, M})));
  g.mask.narrow(1, M, K).narrow(2, M, K).copy_(eye);
}

}  // namespace

TopLogProbs draft_top_log_probs(const torch::Tensor& logits_in, bool guided, const SamplingParams& params, int64_t K) {
  auto logits = logits_in.to(torch::kFloat32);
  const int64_t V = logits.size(-1);
  const bool filters = (params.top_k > 0 && params.top_k < V) || params.top_p < 1.0;
  if (!filters && kernels::use_fused(logits)) {
    auto [values, indices] = kernels::draft_top_k(logits, guided, params.cfg_scale, params.temperature, K,
                                                  nonfinite_watch::flag_on(logits.device()));
    return {values, indices};
  }
  if (guided) logits = cfg_combine(logits, params.cfg_scale);
  const auto log_probs = params.greedy() ? torch::log_softmax(logits, -1) : target_probs(logits, params).log();
  auto [values, indices] = log_probs.topk(K, -1);
  return {values, indices};
}

TreeCandidates grow_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<TreeShape>& shapes,
                                  const torch::Tensor& own, const TreeExpand& expand) {
  int64_t K = 1;
  for (const auto& s : shapes) K = std::max(K, s.top_k);
  const auto top = [K](const torch::Tensor& log_probs) {
    auto [values, indices] = log_probs.topk(K, -1);
    return TopLogProbs{values, indices};
  };
  return grow_dynamic_trees(
      top(root_log_probs), shapes, own,
      [&](const torch::Tensor& tokens, const torch::Tensor& parent_slot, const torch::Tensor& mask, int64_t level) {
        return top(expand(tokens, parent_slot, mask, level));
      });
}

TreeCandidates grow_dynamic_trees(const TopLogProbs& root, const std::vector<TreeShape>& shapes,
                                  const torch::Tensor& own, const TreeExpandTop& expand) {
  const int64_t B = root.values.size(0);
  VISPEC_ASSERT(int64_t(shapes.size()) == B && own.size(0) == B && own.size(1) == 3, "tree shapes of ", shapes.size(),
                " rows for ", B);
  int64_t K = 1, D = 0;
  for (const auto& s : shapes) {
    K = std::max(K, s.top_k);
    D = std::max(D, s.depth);
  }
  const auto device = root.values.device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const auto f64 = i64.dtype(torch::kFloat64);
  const int64_t C = K + D * K * K, W = K * (D + 1);
  Growth g{torch::empty({B, K}, f64), torch::empty({B, C}, i64),
           torch::empty({B, C}, i64), torch::empty({B, C}, f64),
           torch::empty({B, W}, i64), torch::empty({B, W}, i64),
           torch::empty({B, W}, i64), torch::empty({B, W, W}, i64.dtype(torch::kBool))};
  const bool fused = kernels::use_fused(device, torch::kFloat32);
  auto grow = [&](const torch::Tensor& lp, const torch::Tensor& idx, int64_t level) {
    if (!fused) return grow_level_composite(lp, idx, own, g, level);
    kernels::grow_level(lp, idx, own, g.score, g.cand_token, g.cand_parent, g.cand_score, g.frontier, g.tokens,
                        g.parent_slot, g.mask, level);
  };
  VISPEC_ASSERT(root.values.dim() == 2 && root.values.size(1) == K, "the root's top log-probs are ",
                root.values.sizes(), ", not [", B, ", ", K, "]");
  grow(root.values, root.indices, -1);
  for (int64_t level = 0; level < D; ++level) {
    const int64_t M = K * (level + 1);
    const auto top =
        expand(g.tokens.narrow(1, 0, M), g.parent_slot.narrow(1, 0, M), g.mask.narrow(1, 0, M).narrow(2, 0, M), level);
    grow(top.values, top.indices, level);  // [B, K, K] each
  }
  TreeCandidates c;
  c.top_k = K;
  c.depth = D;
  c.token = g.cand_token;
  c.parent = g.cand_parent;
  c.score = g.cand_score;
  c.nodes = own.select(1, 2);
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
