// EAGLE-2 (decoding/eagle2.cpp), its tree builder and ADT-Tree's shape policy: greedy tokens identical to AR's on the
// tiny model and on the embedded model with its shipped head; at temperature 1 the first tokens' distribution over 4000
// samples matches the exact target distribution (vocabulary 8) by chi-square, with the exact rule; the
// builder's trees have the promised shape.
#include <gtest/gtest.h>

#include <limits>

#include "decoding/adt_tree.h"
#include "decoding/ar.h"
#include "decoding/common/draft_tree.h"
#include "decoding/eagle2.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

TEST(DraftTree, DynamicBuilderKeepsTheBestPathsAndParentsBeforeChildren) {
  const int64_t V = 16;
  auto gen = at::detail::createCPUGenerator(1);
  const auto root_lp = torch::log_softmax(torch::randn({2, V}, gen, torch::kFloat64) * 2, -1);
  int calls = 0;
  TreeExpand expand = [&](const torch::Tensor& tok, const torch::Tensor& parent_slot, const torch::Tensor& mask,
                          int64_t level) {
    ++calls;
    EXPECT_EQ(tok.size(1), 3 * (level + 1));
    EXPECT_TRUE(mask.select(1, 0).select(1, 0).all().item<bool>());  // every node attends itself
    for (int64_t m = 3; m < tok.size(1); ++m) EXPECT_GE(parent_slot[0][m].item<int64_t>(), 0);
    // Log-probs that depend on the node's token, so paths differ.
    const auto newest = tok.narrow(1, tok.size(1) - 3, 3);
    return torch::log_softmax(
        torch::sin(newest.to(torch::kFloat64).unsqueeze(-1) * torch::arange(V, torch::kFloat64)) * 3, -1);
  };
  const auto trees = build_dynamic_trees(root_lp, {5, 6}, TreeShape{2, 3, 10}, expand);
  EXPECT_EQ(calls, 2);
  for (const auto& t : trees) {
    EXPECT_EQ(t.size(), 10);
    EXPECT_EQ(t.parent[0], -1);
    for (int64_t i = 1; i < t.size(); ++i) {
      EXPECT_LT(t.parent[size_t(i)], i);
      EXPECT_EQ(t.depth[size_t(i)], t.depth[size_t(t.parent[size_t(i)])] + 1);
      EXPECT_LE(t.score[size_t(i)], t.parent[size_t(i)] == 0 ? 0.0 : t.score[size_t(t.parent[size_t(i)])] + 1e-12);
      EXPECT_LE(t.depth[size_t(i)], 3);
    }
  }
  EXPECT_EQ(trees[0].token[0], 5);
  // The root's best child is the drafter's argmax.
  EXPECT_EQ(trees[1].token[size_t(trees[1].children()[0][0])], root_lp[1].argmax().item<int64_t>());
  const auto mask = tree_masks(trees, 11);
  EXPECT_TRUE(mask[0][10][10].item<bool>());  // padding attends itself only
  EXPECT_EQ(mask[0][10].sum().item<int64_t>(), 1);
}

TEST(Eagle2Decoder, GreedyTokensEqualArGreedy) {
  const auto p = test::guided_sampling(0);
  auto target = test::tiny_gpt(1);
  const auto r = test::requests(0, 5);
  const auto reference = ArDecoder(target, p).decode(r).tokens;
  for (auto shape : {TreeShape{4, 10, 59}, TreeShape{1, 2, 3}, TreeShape{0, 4, 5}}) {
    Eagle2Decoder e("eagle2", target, test::tiny_eagle_drafter(target->config(), 2), p, shape, AcceptanceParams{},
                    nullptr);
    const auto out = e.decode(r);
    EXPECT_TRUE(torch::equal(out.tokens, reference)) << "depth " << shape.depth;
    for (const auto& s : out.stats) EXPECT_LE(s.target_forwards, 1 + 16);
  }
}

TEST(Eagle2Decoder, GreedyOnTheEmbeddedModelWithItsShippedHeadEqualsArAndAcceptsLongPaths) {
  const auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  Gpt target(model.gpt);
  load_weights(*target, model.gpt_weights);
  target->eval();
  const auto p = test::guided_sampling(0);
  const auto r = test::requests(0, 3);
  const auto reference = ArDecoder(target, p).decode(r);
  Eagle2Decoder e("eagle2", target, load_eagle_drafter(model.eagle_head, model), p, TreeShape{4, 10, 59},
                  AcceptanceParams{}, nullptr);
  const auto out = e.decode(r);
  EXPECT_TRUE(torch::equal(out.tokens, reference.tokens));
  SampleStats total;
  for (const auto& s : out.stats) total += s;
  std::cout << "embedded model, greedy: " << total.mean_accepted_length() << " tokens per target forward\n";
  EXPECT_GT(total.mean_accepted_length(), 2.0);
}

TEST(Eagle2Decoder, SamplesTheExactTargetDistributionAtTemperatureOne) {
  const int64_t V = 8;
  const auto p = test::guided_sampling(1.0);
  auto target = test::tiny_gpt(3, V);
  auto config = target->config();
  Eagle2Decoder e("eagle2", target, test::tiny_eagle_drafter(config, 4), p, TreeShape{2, 3, 8}, AcceptanceParams{},
                  nullptr);
  EXPECT_TRUE(test::first_token_fit(e, target, p, V, "EAGLE-2").passes());
  // The trees were used, not bypassed: most tokens came from accepted drafts.
  SampleStats total;
  for (const auto& s : e.decode(test::requests(0, 200, 1)).stats) total += s;
  EXPECT_GT(total.mean_accepted_length(), 1.2);
}

TEST(DraftTree, RowsWithDifferentShapesKeepToTheirOwnDepthAndWidth) {
  const int64_t V = 16;
  auto gen = at::detail::createCPUGenerator(2);
  const auto root_lp = torch::log_softmax(torch::randn({2, V}, gen, torch::kFloat64) * 2, -1);
  TreeExpand expand = [&](const torch::Tensor& tok, const torch::Tensor&, const torch::Tensor&, int64_t level) {
    const int64_t K = tok.size(1) / (level + 1);
    const auto newest = tok.narrow(1, tok.size(1) - K, K);
    return torch::log_softmax(
        torch::cos(newest.to(torch::kFloat64).unsqueeze(-1) * torch::arange(V, torch::kFloat64)) * 3, -1);
  };
  const std::vector<TreeShape> shapes = {TreeShape{3, 4, 30}, TreeShape{1, 2, 30}};
  const auto trees = build_dynamic_trees(root_lp, {1, 2}, shapes, expand);
  for (size_t b = 0; b < 2; ++b) {
    const auto children = trees[b].children();
    for (int64_t i = 0; i < trees[b].size(); ++i) {
      EXPECT_LE(trees[b].depth[size_t(i)], shapes[b].depth + 1);
      EXPECT_LE(int64_t(children[size_t(i)].size()), shapes[b].top_k);
    }
  }
  // The narrow row: 2 root children, 2 x 2 grandchildren from its 2 expanded nodes: 1 + 2 + 4 nodes.
  EXPECT_EQ(trees[1].size(), 7);
  // The same row alone gives the same tree: padding to the wide row's block changes nothing.
  const auto alone = build_dynamic_trees(root_lp.narrow(0, 1, 1), {2}, shapes[1], expand);
  EXPECT_EQ(alone[0].token, trees[1].token);
  EXPECT_EQ(alone[0].parent, trees[1].parent);
}

// EAGLE-2's decoders build the verification's inputs and the walk's tables on the device from the grown
// candidates (no read); they equal what the host builds from the trees read back, padding included: for one
// shape, for rows of different shapes, and for rows whose drafter filtered most tokens (trees smaller than
// total_tokens).
TEST(DraftTree, GrownTablesOnTheDeviceEqualTheHostsTrees) {
  const int64_t V = 16, B = 3, cells = 20;
  auto gen = at::detail::createCPUGenerator(3);
  auto root_lp = torch::log_softmax(torch::randn({B, V}, gen, torch::kFloat64) * 2, -1);
  TreeExpand expand = [&](const torch::Tensor& tok, const torch::Tensor&, const torch::Tensor&, int64_t level) {
    const int64_t K = tok.size(1) / (level + 1);
    const auto newest = tok.narrow(1, tok.size(1) - K, K);
    auto lp = torch::log_softmax(
        torch::sin(newest.to(torch::kFloat64).unsqueeze(-1) * torch::arange(V, torch::kFloat64)) * 3, -1);
    // Row 2's drafter leaves only token 0 (as top-k / top-p filtering does).
    lp.select(0, 2).narrow(-1, 1, V - 1).fill_(-std::numeric_limits<double>::infinity());
    return lp;
  };
  root_lp.select(0, 2).narrow(-1, 2, V - 2).fill_(-std::numeric_limits<double>::infinity());
  const std::vector<int64_t> roots = {4, 7, 9}, root_index = {3, 18, 0};
  for (const auto& shapes :
       std::vector<std::vector<TreeShape>>{{TreeShape{2, 3, 10}, TreeShape{2, 3, 10}, TreeShape{2, 3, 10}},
                                           {TreeShape{3, 4, 30}, TreeShape{1, 2, 30}, TreeShape{2, 4, 30}}}) {
    const auto candidates = grow_dynamic_trees(root_lp, shapes, expand);
    const auto trees = read_trees(candidates, roots);
    const int64_t T = shapes[0].total_tokens;
    EXPECT_LT(trees[2].size(), T) << "row 2 was meant to fill fewer nodes than total_tokens";
    const auto grown = grown_tree_tables(candidates, torch::tensor(roots), torch::tensor(root_index), T, cells);
    const auto in = tree_inputs(trees, root_index, cells, T);
    const auto tables = tree_tables(trees, T, torch::kCPU, candidates.top_k);
    EXPECT_TRUE(torch::equal(grown.inputs.tokens, in.tokens));
    EXPECT_TRUE(torch::equal(grown.inputs.positions, in.positions));
    EXPECT_TRUE(torch::equal(grown.inputs.mask, in.mask));
    EXPECT_TRUE(torch::equal(grown.tables.token, tables.token));
    EXPECT_TRUE(torch::equal(grown.tables.depth, tables.depth));
    EXPECT_TRUE(torch::equal(grown.tables.children, tables.children)) << grown.tables.children << tables.children;
  }
}

TEST(AdtTree, ShapeRuleAndNeighbourLookupFollowThePaper) {
  AdtParams p;  // LlamaGen: beta 1, l_d 1, l_k 10, d in [1, 9], k in [4, 39]
  // All drafts accepted (alpha = 1 >= beta): deeper and narrower.
  EXPECT_EQ(adapt_tree_shape(TreeShape{4, 20, 59}, 4, p).depth, 5);
  EXPECT_EQ(adapt_tree_shape(TreeShape{4, 20, 59}, 4, p).top_k, 10);
  // Fewer accepted: shallower and wider; bounds clamp.
  EXPECT_EQ(adapt_tree_shape(TreeShape{4, 20, 59}, 2, p).depth, 3);
  EXPECT_EQ(adapt_tree_shape(TreeShape{4, 20, 59}, 2, p).top_k, 30);
  EXPECT_EQ(adapt_tree_shape(TreeShape{1, 35, 59}, 0, p).depth, 1);
  EXPECT_EQ(adapt_tree_shape(TreeShape{1, 35, 59}, 0, p).top_k, 39);
  EXPECT_EQ(adapt_tree_shape(TreeShape{9, 5, 59}, 9, p).top_k, 4);
  EXPECT_EQ(adapt_tree_shape(TreeShape{9, 5, 59}, 9, p).depth, 9);
  // The policy starts from the left neighbour in the row, else the tree above, else the initial shape.
  AdtPolicy policy(p, TreeShape{4, 10, 59}, 16);
  EXPECT_EQ(policy.next(0).depth, 4);
  policy.record(0, TreeShape{4, 10, 59}, 4);  // all accepted
  EXPECT_EQ(policy.next(5).depth, 5);         // left neighbour in row 0
  policy.record(5, TreeShape{5, 4, 59}, 1);   // poor
  EXPECT_EQ(policy.next(16).depth, 5);        // row 1, column 0: the tree above is the one at column 0
  EXPECT_EQ(policy.next(21).depth, 4);        // row 1, column 5: above-left is the one at column 5
  EXPECT_EQ(policy.next(40).depth, 4);        // row 2: no tree in rows 1-2: the initial shape
}

TEST(AdtTreeDecoder, GreedyTokensEqualArGreedyAndDepthsMove) {
  const auto p = test::guided_sampling(0);
  auto target = test::tiny_gpt(1);
  const auto r = test::requests(0, 4);
  const auto reference = ArDecoder(target, p).decode(r).tokens;
  AdtParams adt;
  adt.step_k = 2;
  adt.max_k = 12;
  adt.max_depth = 5;
  Eagle2Decoder d("adt_tree", target, test::tiny_eagle_drafter(target->config(), 2), p, TreeShape{3, 6, 20},
                  AcceptanceParams{}, nullptr, adt);
  const auto out = d.decode(r);
  EXPECT_TRUE(torch::equal(out.tokens, reference));
  for (const auto& s : out.stats) {
    EXPECT_GE(s.mean_tree_depth(), 1.0);
    EXPECT_LE(s.mean_tree_depth(), 5.0);
  }
  const auto fixed = Eagle2Decoder("eagle2", target, test::tiny_eagle_drafter(target->config(), 2), p,
                                   TreeShape{3, 6, 20}, AcceptanceParams{}, nullptr)
                         .decode(r);
  EXPECT_DOUBLE_EQ(fixed.stats[0].mean_tree_depth(), 3.0);
  EXPECT_NE(out.stats[0].mean_tree_depth(), 3.0);  // the policy moved the depth
}

}  // namespace vispec
