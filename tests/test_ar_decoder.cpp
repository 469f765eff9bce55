// AR decoding: a sample's tokens depend only on (seed, sample id, condition), never on its batch.
#include <gtest/gtest.h>

#include "decoding/ar.h"
#include "tiny_models.h"

namespace vispec {

namespace {
DecodeRequest request(std::vector<int64_t> classes, std::vector<uint64_t> ids) {
  return {class_conditions(classes), std::move(ids), 2024};
}

void expect_alone_equals_batch(const SamplingParams& params) {
  ArDecoder ar(test::tiny_gpt(), params);
  const std::vector<int64_t> classes = {0, 1, 2, 0, 1, 2, 2, 1};
  std::vector<uint64_t> ids = {10, 11, 12, 13, 14, 15, 16, 17};
  auto batch = ar.decode(request(classes, ids));
  ASSERT_EQ(batch.tokens.sizes(), (std::vector<int64_t>{8, 16}));
  for (int64_t b = 0; b < 8; ++b) {
    auto alone = ar.decode(request({classes[b]}, {ids[b]}));
    EXPECT_TRUE(torch::equal(alone.tokens[0], batch.tokens[b])) << "sample " << ids[b];
    EXPECT_EQ(alone.stats[0].target_forwards, 16);
  }
  // Different samples of the same class differ when sampling (same class, different ids: 12 and 15).
  if (!params.greedy()) {
    EXPECT_FALSE(torch::equal(batch.tokens[2], batch.tokens[5]));
  }
}
}  // namespace

TEST(ArDecoder, SampleAloneEqualsSameSampleInABatchOf8WithCfg) {
  SamplingParams p;
  p.cfg_scale = 2.0;
  p.temperature = 1.0;
  p.top_k = 20;
  expect_alone_equals_batch(p);
}

TEST(ArDecoder, SampleAloneEqualsBatchWithoutCfgGreedy) {
  SamplingParams p;
  p.temperature = 0;
  expect_alone_equals_batch(p);
}

TEST(ArDecoder, GreedyFollowsTheArgmaxOfAFullForward) {
  SamplingParams p;
  p.temperature = 0;
  auto gpt = test::tiny_gpt();
  ArDecoder ar(gpt, p);
  auto res = ar.decode(request({1, 2}, {0, 1}));
  torch::NoGradGuard no_grad;
  auto logits =
      gpt->forward_sequence(gpt->embed_classes(torch::tensor({1, 2}, torch::kInt64)), res.tokens.narrow(1, 0, 15))
          .logits;
  EXPECT_TRUE(torch::equal(logits.argmax(-1), res.tokens));
}

}  // namespace vispec
