// EAGLE-2's trees laid out for verification as one operator (kernels/fused_ops.h's tree_layout): its CPU reference
// gives the composite formulas' outputs exactly (decoding/floor/draft_tree.h's kept_candidates and
// grown_tree_tables under CompositeOnly) on random candidates with ties, filtered (-inf) and NaN scores, rows of
// different sizes and T wider than the trees; its CUDA kernel gives the CPU reference's.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "core/device.h"
#include "core/op_counter.h"
#include "decoding/floor/draft_tree.h"
#include "kernels/fused_ops.h"
#include "kernels/kernel_check.h"

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
}

}  // namespace vispec
