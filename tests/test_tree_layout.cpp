// EAGLE-2's trees grown and laid out on the device as operators (kernels/grow_level.h, kernels/tree_layout.h):
// their CPU references give the composite formulas' outputs exactly (decoding/common/draft_tree.h's
// grow_dynamic_trees, kept_candidates and grown_tree_tables under CompositeOnly) on random candidates with ties,
// filtered (-inf) and NaN scores, rows of different shapes and T wider than the trees; their CUDA kernels give
// the CPU references'.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "core/device.h"
#include "core/op_counter.h"
#include "decoding/common/draft_tree.h"
#include "kernels/cpu_team.h"
#include "kernels/tree_layout.h"
#include "kernels/kernel_check.h"
#include "kernels/sort_order.h"

namespace vispec {

namespace {

// B rows of candidates as grow_dynamic_trees lays them out: level 0 the root's K children, then per level K
// blocks of K, each block under a distinct candidate of the level before (a frontier node is expanded once).
// Scores from a few values (ties), some -inf, one NaN; nodes per row between 0 and C.
struct LayoutCase {
  TreeCandidates candidates;
  torch::Tensor roots, root_index;
  int64_t T = 1;
};

LayoutCase random_layout_case(int64_t B, int64_t K, int64_t D, uint64_t seed) {
  std::mt19937_64 gen(seed);
  const int64_t C = K + D * K * K;
  auto score = torch::empty({B, C}, torch::kFloat64), parent = torch::empty({B, C}, torch::kInt64);
  auto token = torch::randint(1000, {B, C}, torch::kInt64);
  auto nodes = torch::empty({B}, torch::kInt64);
  auto s = score.accessor<double, 2>();
  auto p = parent.accessor<int64_t, 2>();
  auto n = nodes.accessor<int64_t, 1>();
  int64_t most = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      const auto draw = gen() % 12;
      s[b][c] = draw == 0 ? -std::numeric_limits<double>::infinity() : -double(draw % 6) * 0.5;
    }
    if (b == 1) s[b][C / 2] = std::numeric_limits<double>::quiet_NaN();
    for (int64_t c = 0; c < K; ++c) p[b][c] = -1;
    for (int64_t level = 1, start = K, before = 0, width = K; level <= D; ++level) {
      std::vector<int64_t> frontier(static_cast<size_t>(width));
      for (int64_t i = 0; i < width; ++i) frontier[size_t(i)] = before + i;
      std::shuffle(frontier.begin(), frontier.end(), gen);
      for (int64_t blk = 0; blk < K; ++blk)
        for (int64_t j = 0; j < K; ++j) p[b][start + blk * K + j] = frontier[size_t(blk)];
      before = start;
      start += K * K;
      width = K * K;
    }
    n[b] = b == 0 ? 0 : int64_t(gen() % uint64_t(C + 1));
    most = std::max(most, n[b]);
  }
  LayoutCase l;
  l.candidates = TreeCandidates{token, parent, score, nodes, K, D};
  l.roots = torch::randint(1000, {B}, torch::kInt64);
  l.root_index = torch::randint(30, {B}, torch::kInt64);
  l.T = 1 + most + int64_t(seed % 3);  // at times wider than the widest tree
  return l;
}

GrownTrees laid_out(const LayoutCase& l, int64_t cells) {
  return grown_tree_tables(l.candidates, l.roots, l.root_index, l.T, cells);
}

std::string differs(const GrownTrees& a, const GrownTrees& b) {
  if (!torch::equal(a.inputs.tokens, b.inputs.tokens)) return "tokens";
  if (!torch::equal(a.inputs.positions, b.inputs.positions)) return "positions";
  if (!torch::equal(a.inputs.mask, b.inputs.mask)) return "mask";
  if (!torch::equal(a.tables.token, b.tables.token)) return "table tokens";
  if (!torch::equal(a.tables.depth, b.tables.depth)) return "depths";
  if (!torch::equal(a.tables.children, b.tables.children)) return "children";
  return "";
}

}  // namespace

TEST(TreeLayout, TheOperatorLaysOutAsTheCompositeFormulas) {
  torch::NoGradGuard no_grad;
  int64_t compared = 0;
  for (const auto& [K, D] : std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {1, 3}, {3, 2}, {4, 3}, {10, 2}}) {
    for (uint64_t seed = 0; seed < 6; ++seed) {
      const auto l = random_layout_case(5, K, D, 100 * uint64_t(K) + seed);
      const int64_t cells = 8 + int64_t(seed);  // positions clamp at the last cell
      GrownTrees composite;
      torch::Tensor composite_keep;
      {
        const kernels::CompositeOnly formulas;
        composite = laid_out(l, cells);
        composite_keep = kept_candidates(l.candidates);
      }
      OpCounter counter;
      const auto fused = laid_out(l, cells);
      EXPECT_EQ(counter.ops(), 1) << "the layout is one operator where the fused operators run";
      EXPECT_EQ(differs(fused, composite), "") << "K " << K << ", D " << D << ", seed " << seed;
      const auto& c = l.candidates;
      const auto keep = std::get<0>(kernels::tree_layout(c.score, c.parent, c.token, c.nodes, l.roots, l.root_index,
                                                         c.top_k, c.depth, l.T, cells));
      EXPECT_TRUE(torch::equal(keep, composite_keep)) << "K " << K << ", D " << D << ", seed " << seed;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 30);
}

// The operator refuses candidates that are not K + D K^2 per row, and inputs of another dtype or shape.
TEST(TreeLayout, RefusesInputsOfTheWrongShape) {
  const auto l = random_layout_case(2, 3, 2, 1);
  const auto& c = l.candidates;
  auto call = [&](const torch::Tensor& score, const torch::Tensor& nodes, int64_t K) {
    return kernels::tree_layout(score, c.parent, c.token, nodes, l.roots, l.root_index, K, c.depth, l.T, 10);
  };
  EXPECT_NO_THROW(call(c.score, c.nodes, 3));
  EXPECT_THROW(call(c.score, c.nodes, 2), std::exception);
  EXPECT_THROW(call(c.score.to(torch::kFloat32), c.nodes, 3), std::exception);
  EXPECT_THROW(call(c.score, c.nodes.narrow(0, 0, 1), 3), std::exception);
}

namespace {

// A drafter for the growth tests: log-probs over V codes from each newest node's token (a function of the token
// alone, so that the same tree gives the same children on any device), with ties: codes 3 and 4 always share a
// log-prob.
TreeExpand synthetic_drafter(int64_t V, std::vector<std::vector<torch::Tensor>>* seen = nullptr) {
  return
      [V, seen](const torch::Tensor& tok, const torch::Tensor& parent_slot, const torch::Tensor& mask, int64_t level) {
        if (seen) seen->push_back({tok.cpu().clone(), parent_slot.cpu().clone(), mask.cpu().clone()});
        const int64_t K = tok.size(1) / (level + 1);
        const auto newest = tok.narrow(1, tok.size(1) - K, K).to(torch::kFloat64);
        auto logits = torch::sin(newest.unsqueeze(-1) * 0.37 * torch::arange(V, newest.options()) + 0.5) * 3;
        logits.narrow(-1, 4, 1).copy_(logits.narrow(-1, 3, 1));
        return torch::log_softmax(logits, -1);
      };
}

const std::vector<std::vector<TreeShape>>& growth_shapes() {
  static const std::vector<std::vector<TreeShape>> shapes{
      {TreeShape{3, 4, 30}, TreeShape{3, 4, 30}, TreeShape{3, 4, 30}},
      {TreeShape{3, 4, 30}, TreeShape{1, 2, 30}, TreeShape{2, 4, 12}, TreeShape{0, 3, 4}},  // ADT-Tree's rows
      {TreeShape{4, 1, 6}}};
  return shapes;
}

}  // namespace

// The growth: every candidate and every drafter call's inputs (the frontier's tokens, parents and ancestry) are
// the composite formulas', and a level is one operator where the formulas take some 25.
TEST(TreeLayout, TheGrowthOperatorGrowsAsTheCompositeFormulas) {
  torch::NoGradGuard no_grad;
  for (const auto& shapes : growth_shapes()) {
    const int64_t B = int64_t(shapes.size());
    const auto root = torch::log_softmax(torch::randn({B, 24}, torch::kFloat64) * 2, -1);
    std::vector<std::vector<torch::Tensor>> seen_fused, seen_composite;
    TreeCandidates composite;
    int64_t composite_ops = 0;
    {
      const kernels::CompositeOnly formulas;
      OpCounter counter;
      composite = grow_dynamic_trees(root, shapes, synthetic_drafter(24, &seen_composite));
      composite_ops = counter.ops();
    }
    OpCounter counter;
    const auto fused = grow_dynamic_trees(root, shapes, synthetic_drafter(24, &seen_fused));
    const int64_t fused_ops = counter.ops();
    std::printf("growth of %lld rows: %lld operators fused, %lld composite\n", static_cast<long long>(B),
                static_cast<long long>(fused_ops), static_cast<long long>(composite_ops));
    EXPECT_LT(fused_ops, composite_ops);
    EXPECT_TRUE(torch::equal(fused.token, composite.token));
    EXPECT_TRUE(torch::equal(fused.parent, composite.parent));
    EXPECT_TRUE(torch::equal(fused.score, composite.score)) << fused.score << composite.score;
    EXPECT_TRUE(torch::equal(fused.nodes, composite.nodes));
    ASSERT_EQ(seen_fused.size(), seen_composite.size());
    for (size_t level = 0; level < seen_fused.size(); ++level)
      for (size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(torch::equal(seen_fused[level][i], seen_composite[level][i]))
            << "level " << level << " input " << i;
  }
}

// The two ways a team finds the first `top` values in torch.sort's stable descending order: a CPU team sorts, a
// CUDA block counts (kernels/sort_order.h's top_by_counting, run here by a CPU team): the same ranks for values
// with ties, NaN, infinities and both zeros, for every `top` from none to more than all.
namespace {
struct CountingTeam : kernels::CpuTeam {
  template <class F>
  void top(const double* v, int64_t n, int64_t top, bool ranks, const F& f) {
    kernels::order::top_by_counting(*this, v, n, top, ranks, f);
  }
};
}  // namespace

TEST(TreeLayout, CountingTheTopEqualsSortingIt) {
  std::mt19937_64 gen(11);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values{-inf, inf, nan, 0.0, -0.0, -0.5, -1.25, 3.0, -3.0, 1e-300, -1e300};
  int64_t checked = 0;
  for (const int64_t n : {1, 5, 300, 2000}) {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = values[gen() % values.size()];
    for (const int64_t top : {int64_t(0), int64_t(1), n / 3, n - 1, n, n + 5}) {
      std::vector<int64_t> sorted(v.size()), counted(v.size()), member(v.size());
      kernels::CpuTeam sorting;
      CountingTeam counting;
      sorting.top(v.data(), n, top, true, [&](int64_t c, int64_t r) { sorted[size_t(c)] = r; });
      counting.top(v.data(), n, top, true, [&](int64_t c, int64_t r) { counted[size_t(c)] = r; });
      counting.top(v.data(), n, top, false, [&](int64_t c, int64_t r) { member[size_t(c)] = r >= 0; });
      EXPECT_EQ(counted, sorted) << "n " << n << ", top " << top;
      for (size_t c = 0; c < v.size(); ++c) EXPECT_EQ(member[c], sorted[c] >= 0) << "n " << n << ", top " << top;
      EXPECT_EQ(std::count_if(sorted.begin(), sorted.end(), [](int64_t r) { return r >= 0; }),
                std::clamp<int64_t>(top, 0, n));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24);
}

TEST(TreeLayout, OnCudaEqualsTheCpuReference) {
  if (!cuda_usable()) GTEST_SKIP() << "no CUDA device here: the CUDA case is skipped (scripts/gpu_check.sh runs it)";
  torch::NoGradGuard no_grad;
  const torch::Device gpu(torch::kCUDA, 0);
  for (const auto& [K, D] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {4, 3}, {10, 4}}) {
    const auto l = random_layout_case(7, K, D, 7 + uint64_t(K));
    const auto& c = l.candidates;
    const auto cpu = kernels::tree_layout(c.score, c.parent, c.token, c.nodes, l.roots, l.root_index, K, D, l.T, 40);
    const auto cuda = kernels::tree_layout(c.score.to(gpu), c.parent.to(gpu), c.token.to(gpu), c.nodes.to(gpu),
                                           l.roots.to(gpu), l.root_index.to(gpu), K, D, l.T, 40);
    EXPECT_TRUE(torch::equal(std::get<0>(cuda).cpu(), std::get<0>(cpu))) << "keep, K " << K;
    EXPECT_TRUE(torch::equal(std::get<1>(cuda).cpu(), std::get<1>(cpu))) << "token, K " << K;
    EXPECT_TRUE(torch::equal(std::get<2>(cuda).cpu(), std::get<2>(cpu))) << "depth, K " << K;
    EXPECT_TRUE(torch::equal(std::get<3>(cuda).cpu(), std::get<3>(cpu))) << "positions, K " << K;
    EXPECT_TRUE(torch::equal(std::get<4>(cuda).cpu(), std::get<4>(cpu))) << "mask, K " << K;
    EXPECT_TRUE(torch::equal(std::get<5>(cuda).cpu(), std::get<5>(cpu))) << "children, K " << K;
  }
  // The growth: the same candidates on the GPU as on the CPU.
  for (const auto& shapes : growth_shapes()) {
    const auto root = torch::log_softmax(torch::randn({int64_t(shapes.size()), 24}, torch::kFloat64) * 2, -1);
    const auto cpu = grow_dynamic_trees(root, shapes, synthetic_drafter(24));
    const auto cuda = grow_dynamic_trees(root.to(gpu), shapes, synthetic_drafter(24));
    EXPECT_TRUE(torch::equal(cuda.token.cpu(), cpu.token));
    EXPECT_TRUE(torch::equal(cuda.parent.cpu(), cpu.parent));
    EXPECT_TRUE(torch::equal(cuda.score.cpu(), cpu.score));
  }
}

}  // namespace vispec
