// EAGLE-1's static trees and draws without replacement (decoding/common/static_tree, decoding/eagle1.cpp), and the
// decoders on them (eagle1, lanternpp, coolsd): greedy tokens identical to AR's on the tiny model and on the
// embedded model with its shipped head; at temperature 1 with the exact rule the first tokens' distribution
// matches the exact target (vocabulary 8) by chi-square, and Cool-SD's relaxation visibly does not.
#include <gtest/gtest.h>

#include <map>

#include "core/check.h"
#include "core/device.h"
#include "core/op_counter.h"
#include "decoding/ar.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/sampler.h"
#include "decoding/eagle1.h"
#include "kernels/draws.h"
#include "kernels/kernel_check.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

TEST(StaticTree, NamedTreesHaveTheirPublishedShapeAndBadPathsAreRefused) {
  const auto t = named_static_tree("naive_extend_57");
  EXPECT_EQ(t.size(), 58);  // 57 drafts and the root
  EXPECT_EQ(t.max_depth(), 5);
  EXPECT_EQ(t.draws[0], 5);  // [0] .. [4]
  EXPECT_EQ(t.draws[1], 4);  // [0,0] .. [0,3]
  EXPECT_EQ(t.draws[5], 1);  // [4,0]
  for (int64_t i = 1; i < t.size(); ++i) EXPECT_LT(t.parent[size_t(i)], i);
  EXPECT_EQ(named_static_tree("mc_sim_7b_63").size(), 26);
  const auto chain = named_static_tree("chain_4");
  EXPECT_EQ(chain.size(), 5);
  EXPECT_EQ(chain.max_depth(), 4);
  EXPECT_THROW(named_static_tree("chain_0"), Error);
  EXPECT_THROW(named_static_tree("naive"), Error);
  EXPECT_THROW(static_tree_from_paths({{0}, {2}}), Error);     // rank 1 skipped: not a prefix of the draws
  EXPECT_THROW(static_tree_from_paths({{0, 0}, {0}}), Error);  // child before its parent
}

// Draws without replacement: the conditional probabilities are q(y_j) / (1 - earlier mass) exactly, and the
// ordered pairs' frequencies follow q(a) q(b) / (1 - q(a)).
TEST(StaticTree, DrawsWithoutReplacementFollowTheSequentialDistribution) {
  const auto q = torch::tensor({0.1, 0.4, 0.0, 0.2, 0.3}, torch::kFloat64);
  const int64_t S = 20000;
  auto gen = at::detail::createCPUGenerator(7);
  const auto u = torch::rand({1, S, 3}, gen, torch::kFloat64);
  const auto [tok, prob] = draw_without_replacement(q.view({1, 1, 5}).expand({1, S, 5}), u);
  std::map<std::pair<int64_t, int64_t>, int64_t> pairs;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t a = tok[0][s][0].item<int64_t>(), b = tok[0][s][1].item<int64_t>(), c = tok[0][s][2].item<int64_t>();
    ASSERT_TRUE(a != b && b != c && a != c);
    ASSERT_NE(a, 2);  // zero mass is never drawn while mass is left
    const double qa = q[a].item<double>(), qb = q[b].item<double>(), qc = q[c].item<double>();
    EXPECT_NEAR(prob[0][s][0].item<double>(), qa, 1e-12);
    EXPECT_NEAR(prob[0][s][1].item<double>(), qb / (1 - qa), 1e-12);
    EXPECT_NEAR(prob[0][s][2].item<double>(), qc / (1 - qa - qb), 1e-12);
    ++pairs[{a, b}];
  }
  double chi = 0;
  int cells = 0;
  for (int64_t a : {0, 1, 3, 4})
    for (int64_t b : {0, 1, 3, 4})
      if (a != b) {
        const double expect = double(S) * q[a].item<double>() * q[b].item<double>() / (1 - q[a].item<double>());
        chi += std::pow(double(pairs[{a, b}]) - expect, 2) / expect;
        ++cells;
      }
  std::printf("ordered pairs: chi2 %.1f over %d cells (df %d, 0.1%% point 31.3)\n", chi, cells, cells - 1);
  EXPECT_LT(chi, 31.3);
  // Three draws from a row with two tokens of mass: the third has nothing left.
  const auto [t2, p2] = draw_without_replacement(torch::tensor({0.0, 0.5, 0.5}, torch::kFloat64).view({1, 1, 3}),
                                                 torch::full({1, 1, 3}, 0.5, torch::kFloat64));
  EXPECT_EQ(p2[0][0][2].item<double>(), 0.0);
}

// The draws as one operator (kernels::draw_without_replacement, sums in the tree walk's order) and as the composite
// formula: the same tokens and, within float64 roundings, the same probabilities, for float32 and float64 q with
// rows whose mass runs out; one operator where the formula takes 13 per draw. On CUDA, the CPU reference's bits.
TEST(StaticTree, TheDrawsOperatorDrawsAsTheCompositeFormula) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(9);
  for (const auto dtype : {torch::kFloat32, torch::kFloat64}) {
    auto q = torch::softmax(torch::randn({4, 6, 300}, gen, torch::kFloat64) * 3, -1).to(dtype);
    q[2][3].zero_();
    q[2][3][5] = 0.25;  // one code of mass: the later draws find nothing left
    q[2][3][9] = 0.75;
    const auto u = torch::rand({4, 6, 5}, gen, torch::kFloat64);
    std::pair<torch::Tensor, torch::Tensor> composite;
    {
      const kernels::CompositeOnly formulas;
      composite = draw_without_replacement(q, u);
    }
    OpCounter counter;
    const auto fused = draw_without_replacement(q, u);
    EXPECT_LE(counter.ops(), 2) << "the draws are one operator (and u's conversion)";
    EXPECT_TRUE(torch::equal(fused.first, composite.first)) << dtype;
    EXPECT_TRUE(torch::allclose(fused.second, composite.second, 1e-12, 1e-15)) << dtype;
    EXPECT_EQ(fused.second[2][3][2].item<double>(), 0.0);  // nothing left for the third draw
  }
}

TEST(StaticTree, TheDrawsOperatorOnCudaEqualsTheCpuReference) {
  if (!cuda_usable()) GTEST_SKIP() << "no CUDA device here: the CUDA case is skipped (scripts/gpu_check.sh runs it)";
  torch::NoGradGuard no_grad;
  const torch::Device gpu(torch::kCUDA, 0);
  for (const int64_t V : {64, 16384}) {
    const auto q = torch::softmax(torch::randn({3, 5, V}) * 3, -1);
    const auto u = torch::rand({3, 5, 6}, torch::kFloat64);
    const auto cpu = kernels::draw_without_replacement(q, u);
    const auto cuda = kernels::draw_without_replacement(q.to(gpu), u.to(gpu));
    EXPECT_TRUE(torch::equal(std::get<0>(cuda).cpu(), std::get<0>(cpu))) << V;
    EXPECT_TRUE(torch::equal(std::get<1>(cuda).cpu(), std::get<1>(cpu))) << V;
  }
}

TEST(Eagle1Decoder, GreedyTokensEqualArGreedy) {
  const auto p = test::guided_sampling(0);
  auto target = test::tiny_gpt(1);
  const auto r = test::requests(0, 5);
  const auto reference = ArDecoder(target, p).decode(r).tokens;
  for (const char* tree : {"naive_extend_57", "mc_sim_7b_63", "chain_3"}) {
    Eagle1Decoder e("eagle1", target, test::tiny_eagle_drafter(target->config(), 2), p, named_static_tree(tree),
                    AcceptanceParams{}, nullptr);
    const auto out = e.decode(r);
    EXPECT_TRUE(torch::equal(out.tokens, reference)) << tree;
    for (const auto& s : out.stats) EXPECT_LE(s.target_forwards, 1 + 16);
  }
}

TEST(Eagle1Decoder, GreedyOnTheEmbeddedModelWithItsShippedHeadEqualsAr) {
  const auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  Gpt target(model.gpt);
  load_weights(*target, model.gpt_weights);
  target->eval();
  const auto p = test::guided_sampling(0);
  const auto r = test::requests(0, 3);
  const auto reference = ArDecoder(target, p).decode(r);
  Eagle1Decoder e("eagle1", target, load_eagle_drafter(model.eagle_head, model), p,
                  named_static_tree("naive_extend_57"), AcceptanceParams{}, nullptr);
  const auto out = e.decode(r);
  EXPECT_TRUE(torch::equal(out.tokens, reference.tokens));
  SampleStats total;
  for (const auto& s : out.stats) total += s;
  std::cout << "embedded model, greedy, naive_extend_57: " << total.mean_accepted_length()
            << " tokens per target forward\n";
  EXPECT_GT(total.mean_accepted_length(), 2.0);
}

// A small tree with siblings at two depths: 3 root draws, 2 under the first, 1 under the second, a third level.
StaticTree small_static_tree() { return static_tree_from_paths({{0}, {1}, {2}, {0, 0}, {0, 1}, {1, 0}, {0, 0, 0}}); }

TEST(Eagle1Decoder, SamplesTheExactTargetDistributionAtTemperatureOne) {
  const int64_t V = 8;
  const auto p = test::guided_sampling(1.0);
  auto target = test::tiny_gpt(3, V);
  Eagle1Decoder e("eagle1", target, test::tiny_eagle_drafter(target->config(), 4), p, small_static_tree(),
                  AcceptanceParams{}, nullptr);
  EXPECT_TRUE(test::first_token_fit(e, target, p, V, "EAGLE-1").passes());
  SampleStats total;
  for (const auto& s : e.decode(test::requests(0, 200, 1)).stats) total += s;
  EXPECT_GT(total.mean_accepted_length(), 1.2);  // the drafts were used, not bypassed
  // The test has power: Cool-SD's uniform relaxation w = 3 on the same trees is rejected.
  AcceptanceParams cool;
  cool.rule = AcceptRule::kCoolSd;
  cool.schedule = CoolSchedule::kUniform;
  cool.budget = 3;
  Eagle1Decoder relaxed("coolsd", target, test::tiny_eagle_drafter(target->config(), 4), p, small_static_tree(), cool,
                        nullptr);
  EXPECT_FALSE(test::first_token_fit(relaxed, target, p, V, "Cool-SD w = 3 (must fail)").passes());
}

TEST(Eagle1Decoder, JobFilesNameMethodDefaultsAndBadTrees) {
  DecoderSpec spec;
  spec.name = "lanternpp";
  spec.name_where = "job.yaml:3: decoder.name";
  auto a = parse_decoder(spec).accept;
  EXPECT_EQ(a.rule, AcceptRule::kLanternPlusPlus);
  EXPECT_EQ(a.k, 10);
  EXPECT_EQ(a.lambda, 3.0);
  spec.name = "coolsd";
  a = parse_decoder(spec).accept;
  EXPECT_EQ(a.rule, AcceptRule::kCoolSd);
  EXPECT_EQ(a.budget, 1.1);
  EXPECT_EQ(a.schedule, CoolSchedule::kExponential);
  EXPECT_EQ(parse_decoder(spec).settings<StaticTree>().size(), 58);
  spec.words["tree"] = "naive_extend_75";
  spec.where["tree"] = "job.yaml:5: decoder.tree";
  try {
    parse_decoder(spec);
    FAIL() << "accepted an unknown tree";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job.yaml:5: decoder.tree: unknown static tree 'naive_extend_75'", 0), 0u)
        << e.what();
  }
  spec.name = "eagle2";  // dynamic trees take no static tree
  EXPECT_THROW(parse_decoder(spec), Error);
}

}  // namespace vispec
