#include "decoding/draft_tree.h"

#include <algorithm>
#include <cmath>
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

namespace {
struct Candidate {
  int64_t token, parent;  // parent: candidate index, -1 = the root
  int64_t level;
  double score;
};
}  // namespace

std::vector<DraftTree> build_dynamic_trees(const torch::Tensor& root_log_probs, const std::vector<int64_t>& roots,
                                           const TreeShape& shape, const TreeExpand& expand) {
  const int64_t B = root_log_probs.size(0), K = shape.top_k;
  VISPEC_ASSERT(K >= 1 && shape.depth >= 0 && shape.total_tokens >= 1, "tree shape");
  std::vector<std::vector<Candidate>> cands(static_cast<size_t>(B));
  std::vector<std::vector<int64_t>> frontier(static_cast<size_t>(B));  // candidate indices of every frontier level, in order
  {
    auto [lp, idx] = root_log_probs.to(torch::kCPU, torch::kFloat64).topk(K, -1);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < K; ++j) {
        cands[size_t(b)].push_back({idx[b][j].item<int64_t>(), -1, 0, lp[b][j].item<double>()});
        frontier[size_t(b)].push_back(j);
      }
  }
  for (int64_t level = 0; level < shape.depth; ++level) {
    const int64_t M = K * (level + 1);  // frontier levels 0 .. level
    auto tokens = torch::empty({B, M}, torch::kInt64), parent_slot = torch::empty({B, M}, torch::kInt64);
    auto mask = torch::eye(M, torch::kBool).unsqueeze(0).repeat({B, 1, 1});
    for (int64_t b = 0; b < B; ++b) {
      const auto& f = frontier[size_t(b)];
      for (int64_t m = 0; m < M; ++m) {
        const auto& c = cands[size_t(b)][size_t(f[size_t(m)])];
        tokens[b][m] = c.token;
        // The parent of a level-l frontier node is a level-(l-1) frontier node: find its slot.
        int64_t slot = -1;
        if (c.parent >= 0) slot = int64_t(std::find(f.begin(), f.end(), c.parent) - f.begin());
        parent_slot[b][m] = slot;
        for (int64_t a = slot; a >= 0; a = parent_slot[b][a].item<int64_t>()) mask[b][m][a] = true;
      }
    }
    const auto lp_all = expand(tokens, parent_slot, mask, level).to(torch::kCPU, torch::kFloat64);  // [B, M, V]
    for (int64_t b = 0; b < B; ++b) {
      auto& cb = cands[size_t(b)];
      auto& f = frontier[size_t(b)];
      const auto last = lp_all[b].narrow(0, M - K, K);  // the newest frontier level
      auto [child_lp, child_idx] = last.topk(K, -1);     // [K, K]
      std::vector<double> parent_score(static_cast<size_t>(K));
      for (int64_t i = 0; i < K; ++i) parent_score[size_t(i)] = cb[size_t(f[size_t(M - K + i)])].score;
      auto cu = child_lp + torch::tensor(parent_score, torch::kFloat64).unsqueeze(1);
      const int64_t first = int64_t(cb.size());
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < K; ++j)
          cb.push_back({child_idx[i][j].item<int64_t>(), f[size_t(M - K + i)], level + 1, cu[i][j].item<double>()});
      auto best = std::get<1>(cu.reshape(-1).topk(K));
      for (int64_t j = 0; j < K; ++j) f.push_back(first + best[j].item<int64_t>());
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
      if (count == shape.total_tokens - 1 || !std::isfinite(cb[size_t(i)].score)) break;
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
