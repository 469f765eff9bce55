#include "decoding/draft_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace vispec {

std::vector<std::vector<int64_t>> DraftTree::children() const {
  std::vector<std::vector<int64_t>> c(token.size());
  for (int64_t i = 1; i < size(); ++i) c[size_t(parent[size_t(i)])].push_back(i);
  for (auto& list : c)
    std::stable_sort(list.begin(), list.end(), [&](int64_t a, int64_t b) { return score[size_t(a)] > score[size_t(b)]; });
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

TreeTables tree_tables(const std::vector<DraftTree>& trees, int64_t T, torch::Device device) {
  const int64_t B = int64_t(trees.size());
  std::vector<std::vector<std::vector<int64_t>>> children;
  int64_t C = 1;
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

TreeInputs tree_inputs(const std::vector<DraftTree>& trees, const std::vector<int64_t>& root_index, int64_t cells) {
  const int64_t B = int64_t(trees.size());
  int64_t T = 1;
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

namespace {
struct Candidate {
  int64_t token, parent;  // parent: candidate index, -1 = the root
  int64_t level;
  double score;
};
}  // namespace

std::vector<DraftTree> build_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<int64_t>& roots,
                                           const TreeShape& shape, const TreeExpand& expand) {
  return build_dynamic_trees(root_log_probs, roots,
                             std::vector<TreeShape>(size_t(root_log_probs.size(0)), shape), expand);
}

std::vector<DraftTree> build_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<int64_t>& roots,
                                           const std::vector<TreeShape>& shapes, const TreeExpand& expand) {
  // Rows may ask for different shapes (ADT-Tree): the block is sized by the largest; in a smaller row the
  // nodes beyond its own top_k or depth are scored -inf, so they are expanded with the rest but never chosen.
  const int64_t B = root_log_probs.size(0);
  int64_t K = 1, D = 0;
  for (const auto& s : shapes) {
    VISPEC_ASSERT(s.top_k >= 1 && s.depth >= 0 && s.total_tokens >= 1, "tree shape");
    K = std::max(K, s.top_k);
    D = std::max(D, s.depth);
  }
  const double kNone = -std::numeric_limits<double>::infinity();
  // Per row, which nodes of the newest frontier level may be expanded (the root's children: all K; those
  // beyond a row's top_k already score -inf).
  std::vector<std::vector<char>> expandable(static_cast<size_t>(B), std::vector<char>(static_cast<size_t>(K), 1));
  std::vector<std::vector<Candidate>> cands(static_cast<size_t>(B));
  std::vector<std::vector<int64_t>> frontier(static_cast<size_t>(B));  // candidate indices of every frontier level, in order
  {
    // top-k where the log-probs are (the GPU); only the [B, K] winners come to the CPU
    const auto [lp_dev, idx_dev] = root_log_probs.topk(K, -1);
    const auto lp = lp_dev.to(torch::kCPU, torch::kFloat64), idx = idx_dev.to(torch::kCPU);
    const auto lp_a = lp.accessor<double, 2>();
    const auto idx_a = idx.accessor<int64_t, 2>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < K; ++j) {
        const double score = j < shapes[size_t(b)].top_k ? lp_a[b][j] : kNone;
        cands[size_t(b)].push_back({idx_a[b][j], -1, 0, score});
        frontier[size_t(b)].push_back(j);
      }
  }
  for (int64_t level = 0; level < D; ++level) {
    const int64_t M = K * (level + 1);  // frontier levels 0 .. level
    auto tokens = torch::empty({B, M}, torch::kInt64), parent_slot = torch::empty({B, M}, torch::kInt64);
    auto mask = torch::eye(M, torch::kBool).unsqueeze(0).repeat({B, 1, 1});
    auto tok_a = tokens.accessor<int64_t, 2>(), slot_a = parent_slot.accessor<int64_t, 2>();
    auto mask_a = mask.accessor<bool, 3>();
    for (int64_t b = 0; b < B; ++b) {
      const auto& f = frontier[size_t(b)];
      for (int64_t m = 0; m < M; ++m) {
        const auto& c = cands[size_t(b)][size_t(f[size_t(m)])];
        tok_a[b][m] = c.token;
        // The parent of a level-l frontier node is a level-(l-1) frontier node: find its slot.
        int64_t slot = -1;
        if (c.parent >= 0) slot = int64_t(std::find(f.begin(), f.end(), c.parent) - f.begin());
        slot_a[b][m] = slot;
        for (int64_t a = slot; a >= 0; a = slot_a[b][a]) mask_a[b][m][a] = true;
      }
    }
    const auto [new_lp, new_idx] = expand(tokens, parent_slot, mask, level).topk(K, -1);  // [B, K, K] each
    const auto children_lp = new_lp.to(torch::kCPU, torch::kFloat64), children_idx = new_idx.to(torch::kCPU);
    for (int64_t b = 0; b < B; ++b) {
      auto& cb = cands[size_t(b)];
      auto& f = frontier[size_t(b)];
      const auto child_lp = children_lp[b], child_idx = children_idx[b];  // children of the newest frontier level
      std::vector<double> parent_score(static_cast<size_t>(K));
      for (int64_t i = 0; i < K; ++i) parent_score[size_t(i)] = cb[size_t(f[size_t(M - K + i)])].score;
      auto cu = child_lp + torch::tensor(parent_score, torch::kFloat64).unsqueeze(1);
      const auto& own = shapes[size_t(b)];
      if (level >= own.depth) cu.fill_(kNone);                          // deeper than this row's tree
      for (int64_t i = 0; i < K; ++i)
        if (!expandable[size_t(b)][size_t(i)]) cu[i].fill_(kNone);
      if (own.top_k < K) cu.narrow(1, own.top_k, K - own.top_k).fill_(kNone);  // more children than its top_k
      const int64_t first = int64_t(cb.size());
      const auto idx_a = child_idx.accessor<int64_t, 2>();
      const auto cu_a = cu.accessor<double, 2>();
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < K; ++j) cb.push_back({idx_a[i][j], f[size_t(M - K + i)], level + 1, cu_a[i][j]});
      const auto best = std::get<1>(cu.reshape(-1).topk(K)).contiguous();
      const int64_t* best_p = best.data_ptr<int64_t>();
      for (int64_t j = 0; j < K; ++j) {
        const int64_t chosen = first + best_p[j];
        f.push_back(chosen);
        // A frontier wider than the row's top_k: the extra nodes stay candidates but are not expanded.
        expandable[size_t(b)][size_t(j)] = j < own.top_k;
      }
    }
  }
  // Rerank: the best total_tokens - 1 candidates overall, kept in candidate (level) order.
  std::vector<DraftTree> trees(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const auto& cb = cands[size_t(b)];
    std::vector<int64_t> order(cb.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return cb[size_t(x)].score > cb[size_t(y)].score; });
    std::vector<char> chosen(cb.size(), 0);
    int64_t count = 0;
    for (int64_t i : order) {
      if (count == shapes[size_t(b)].total_tokens - 1 || !std::isfinite(cb[size_t(i)].score)) break;
      chosen[size_t(i)] = 1;
      ++count;
    }
    auto& t = trees[size_t(b)];
    t.token = {roots[size_t(b)]};
    t.parent = {-1};
    t.depth = {0};
    t.score = {0.0};
    std::vector<int64_t> node_of(cb.size(), -1);
    for (size_t i = 0; i < cb.size(); ++i) {
      if (!chosen[i]) continue;
      const int64_t parent = cb[i].parent < 0 ? 0 : node_of[size_t(cb[i].parent)];
      if (parent < 0) continue;  // its parent lost a tie at the cut: a child without its path is unverifiable
      node_of[i] = t.size();
      t.token.push_back(cb[i].token);
      t.parent.push_back(parent);
      t.depth.push_back(cb[i].level + 1);
      t.score.push_back(cb[i].score);
    }
  }
  return trees;
}

}  // namespace vispec
