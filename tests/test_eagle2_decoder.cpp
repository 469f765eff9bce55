// EAGLE-2 (decoding/eagle2.cpp) and its tree builder: greedy tokens identical to AR's on the tiny model and on
// the embedded model with its shipped head; at temperature 1 the first tokens' distribution over 4000
// samples matches the exact target distribution (vocabulary 8) by chi-square, with the exact rule; the
// builder's trees have the promised shape.
#include <gtest/gtest.h>

#include "decoding/ar.h"
#include "decoding/draft_tree.h"
#include "decoding/eagle2.h"
#include "models/load.h"
#include "models/model_config.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

namespace {
EagleDrafter tiny_drafter(const GptConfig& c, uint64_t seed) {
  torch::manual_seed(seed);
  EagleDrafter d(c);
  torch::NoGradGuard no_grad;
  for (auto& p : d->parameters()) p.normal_(0.0, 0.3);
  d->eval();
  return d;
}

}  // namespace

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
    return torch::log_softmax(torch::sin(tok.to(torch::kFloat64).unsqueeze(-1) * torch::arange(V, torch::kFloat64)) * 3, -1);
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
  SamplingParams p;
  p.temperature = 0;
  p.cfg_scale = 2.0;
  auto target = test::tiny_gpt(1);
  const auto r = test::requests(0, 5);
  const auto reference = ArDecoder(target, p).decode(r).tokens;
  for (auto shape : {TreeShape{4, 10, 59}, TreeShape{1, 2, 3}, TreeShape{0, 4, 5}}) {
    Eagle2Decoder e("eagle2", target, tiny_drafter(target->config(), 2), p, shape, AcceptanceParams{}, nullptr);
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
  SamplingParams p;
  p.temperature = 0;
  p.cfg_scale = 2.0;
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
  const int64_t V = 8, samples = test::chi_samples();
  SamplingParams p;
  p.cfg_scale = 2.0;
  p.temperature = 1.0;
  auto target = test::tiny_gpt(3, V);
  auto config = target->config();
  Eagle2Decoder e("eagle2", target, tiny_drafter(config, 4), p, TreeShape{2, 3, 8}, AcceptanceParams{}, nullptr);
  const auto exact = test::exact_first_tokens(target, 1, p, V);
  const auto got = test::count_first_tokens(e, 1, samples, V);
  const auto joint = test::chi_square(got.joint01, exact.joint01), x2 = test::chi_square(got.x2, exact.x2);
  std::cout << "EAGLE-2 (x0, x1): chi2 " << joint.stat << " df " << joint.df << "; x2: chi2 " << x2.stat << " df "
            << x2.df << "\n";
  EXPECT_LT(joint.stat, joint.critical());
  EXPECT_LT(x2.stat, x2.critical());
  // The trees were used, not bypassed: most tokens came from accepted drafts.
  SampleStats total;
  for (const auto& s : e.decode(test::requests(0, 200, 1)).stats) total += s;
  EXPECT_GT(total.mean_accepted_length(), 1.2);
}

}  // namespace vispec
