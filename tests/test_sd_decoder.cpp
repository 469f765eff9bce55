// Speculative decoding (decoding/sd.cpp) proven against the target: greedy tokens identical to AR's, and at
// temperature 1 the empirical distribution of the first tokens over 4000 samples matches the EXACT target
// distribution (computed by enumerating prefixes of a vocabulary-8 model) by chi-square; a relaxed rule
// fails the same test (the test has power).
#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "decoding/ar.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/sd.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

using test::exact_first_tokens;
using test::requests;

TEST(SdDecoder, GreedyTokensEqualArGreedyForEveryDraftLength) {
  const auto p = test::guided_sampling(0);
  auto target = test::tiny_gpt(1), drafter = test::tiny_gpt(2);
  ArDecoder ar(target, p);
  const auto r = requests(0, 6);
  const auto reference = ar.decode(r).tokens;
  for (int64_t gamma : {1, 3, 5, 16}) {
    SdDecoder sd(target, drafter, p, gamma, AcceptanceParams{}, nullptr);
    const auto out = sd.decode(r);
    EXPECT_TRUE(torch::equal(out.tokens, reference)) << "gamma " << gamma;
    for (const auto& s : out.stats) {
      EXPECT_EQ(s.tokens, 16);
      // The prefill, then one forward per iteration, which commits 1 .. gamma + 1 tokens.
      EXPECT_LE(s.target_forwards, 1 + 16);
      EXPECT_GE(s.target_forwards, 1 + (16 + gamma) / (gamma + 1));
      EXPECT_LE(s.accepted, s.drafted);
    }
  }
  // The drafter as its own target accepts everything: gamma + 1 tokens per target forward.
  SdDecoder self(target, target, p, 3, AcceptanceParams{}, nullptr);
  const auto out = self.decode(r);
  EXPECT_TRUE(torch::equal(out.tokens, reference));
  EXPECT_EQ(out.stats[0].accepted, out.stats[0].drafted);
  EXPECT_EQ(out.stats[0].target_forwards, 1 + 4);  // prefill + ceil(16 / 4) iterations
}

TEST(SdDecoder, GreedyOnTheEmbeddedModelAndItsDraftGptEqualsAr) {
  const auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  Gpt target(model.gpt), drafter(model.draft_gpt);
  load_weights(*target, model.gpt_weights);
  load_weights(*drafter, model.draft_gpt_weights);
  target->eval();
  drafter->eval();
  const auto p = test::guided_sampling(0);
  const auto r = requests(0, 4);
  const auto reference = ArDecoder(target, p).decode(r);
  const auto sd = SdDecoder(target, drafter, p, 4, AcceptanceParams{}, nullptr).decode(r);
  EXPECT_TRUE(torch::equal(sd.tokens, reference.tokens));
  SampleStats total;
  for (const auto& s : sd.stats) total += s;
  std::cout << "embedded model, greedy, gamma 4: " << total.mean_accepted_length() << " tokens per target forward, "
            << total.acceptance_rate() << " of drafts accepted\n";
  EXPECT_GT(total.mean_accepted_length(), 1.0);
}

TEST(SdDecoder, SamplesTheExactTargetDistributionAtTemperatureOne) {
  const int64_t V = 8;
  const auto p = test::guided_sampling(1.0);
  auto target = test::tiny_gpt(3, V), drafter = test::tiny_gpt(4, V);
  const auto exact = exact_first_tokens(target, 1, p, V);
  EXPECT_NEAR(exact.joint01.sum().item<double>(), 1.0, 1e-6);  // float32 softmax

  SdDecoder sd(target, drafter, p, 4, AcceptanceParams{}, nullptr);
  EXPECT_TRUE(test::first_token_fit(sd, target, p, V, "SD").passes());
  // AR passes the same test; a relaxed rule (Cool-SD, w = 3 everywhere) does not: the test can fail.
  ArDecoder ar(target, p);
  EXPECT_TRUE(test::first_token_fit(ar, target, p, V, "AR").passes());
  AcceptanceParams relaxed;
  relaxed.rule = AcceptRule::kCoolSd;
  relaxed.schedule = CoolSchedule::kUniform;
  relaxed.budget = 3.0;
  SdDecoder biased(target, drafter, p, 4, relaxed, nullptr);
  const auto b = test::first_token_fit(biased, target, p, V, "Cool-SD w=3");
  EXPECT_GT(b.joint01.stat, b.joint01.critical());
}

TEST(SdDecoder, JobFileErrorsNameTheField) {
  DecoderSpec spec;
  spec.name = "sd";
  spec.name_where = "job.yaml:3: decoder.name";
  spec.words["accept"] = "lanter";
  spec.where["accept"] = "job.yaml:5: decoder.accept";
  try {
    parse_decoder(spec);
    FAIL() << "accepted an unknown rule";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job.yaml:5: decoder.accept: unknown acceptance rule 'lanter'", 0), 0u)
        << e.what();
  }
  spec.words.clear();
  spec.params["delta"] = 1.5;
  spec.where["delta"] = "job.yaml:6: decoder.delta";
  EXPECT_THROW(parse_decoder(spec), Error);
  spec.params.clear();
  spec.params["gamma"] = 2.5;
  spec.where["gamma"] = "job.yaml:7: decoder.gamma";
  EXPECT_THROW(parse_decoder(spec), Error);
  auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  model.draft_gpt_weights.clear();
  spec.params.clear();
  try {
    check_decoder_model(parse_decoder(spec), model);
    FAIL() << "accepted sd without a draft GPT";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no drafters.gpt section"), std::string::npos) << e.what();
  }
}

}  // namespace vispec
