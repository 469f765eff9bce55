// Speculative decoding (decoding/sd.cpp) proven against the target: greedy tokens identical to AR's, and at
// temperature 1 the empirical distribution of the first tokens over 4000 samples matches the EXACT target
// distribution (computed by enumerating prefixes of a vocabulary-8 model) by chi-square; a relaxed rule
// fails the same test (the test has power).
#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "decoding/ar.h"
#include "decoding/decoder_factory.h"
#include "decoding/sd.h"
#include "models/load.h"
#include "models/model_config.h"
#include "tiny_models.h"

namespace vispec {

namespace {
DecodeRequest requests(int64_t first, int64_t count) {
  DecodeRequest r{torch::empty({count}, torch::kInt64), {}, 99};
  for (int64_t i = 0; i < count; ++i) {
    r.class_ids[i] = (first + i) % 3;
    r.sample_ids.push_back(uint64_t(first + i));
  }
  return r;
}

// Exact distribution of the next token after `prefix` [M, t] for class c under CFG (what AR samples from).
torch::Tensor exact_next(Gpt& gpt, int64_t cls, const torch::Tensor& prefix, const SamplingParams& params) {
  torch::NoGradGuard no_grad;
  const int64_t M = prefix.size(0);
  auto ids = torch::cat({torch::full({M}, cls, torch::kInt64), torch::full({M}, gpt->config().num_classes, torch::kInt64)});
  auto out = gpt->forward_sequence(gpt->embed_classes(ids), torch::cat({prefix, prefix}));
  return target_probs(cfg_combine(out.logits.select(1, -1), params.cfg_scale), params).to(torch::kFloat64);
}

// Pearson chi-square of counts against probabilities, cells with expected count < 5 pooled into one.
struct ChiSquare {
  double stat = 0;
  int64_t df = 0;
  // Upper 0.1% point (Wilson-Hilferty): exceeded by chance once in a thousand runs of a correct sampler.
  double critical() const {
    const double k = double(df), z = 3.090;
    return k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
  }
};
ChiSquare chi_square(const torch::Tensor& counts, const torch::Tensor& probs) {
  const double n = counts.sum().item<double>();
  ChiSquare c;
  double pooled_obs = 0, pooled_exp = 0;
  int64_t cells = 0;
  for (int64_t i = 0; i < counts.numel(); ++i) {
    const double e = n * probs.reshape(-1)[i].item<double>(), o = counts.reshape(-1)[i].item<double>();
    if (e < 5) {
      pooled_obs += o;
      pooled_exp += e;
      continue;
    }
    c.stat += (o - e) * (o - e) / e;
    ++cells;
  }
  if (pooled_exp > 0) {
    c.stat += (pooled_obs - pooled_exp) * (pooled_obs - pooled_exp) / pooled_exp;
    ++cells;
  }
  c.df = cells - 1;
  return c;
}

struct FirstTokens {
  torch::Tensor joint01;  // [V, V] counts of (x0, x1)
  torch::Tensor x2;       // [V] counts
};
FirstTokens count_first_tokens(Decoder& decoder, int64_t cls, int64_t samples, int64_t V) {
  FirstTokens f{torch::zeros({V, V}, torch::kFloat64), torch::zeros({V}, torch::kFloat64)};
  for (int64_t start = 0; start < samples; start += 500) {
    auto r = requests(start * 3, 500);
    r.class_ids.fill_(cls);
    auto tokens = decoder.decode(r).tokens;
    for (int64_t b = 0; b < 500; ++b) {
      f.joint01[tokens[b][0].item<int64_t>()][tokens[b][1].item<int64_t>()] += 1;
      f.x2[tokens[b][2].item<int64_t>()] += 1;
    }
  }
  return f;
}

struct ExactFirstTokens {
  torch::Tensor joint01, x2;
};
ExactFirstTokens exact_first_tokens(Gpt& gpt, int64_t cls, const SamplingParams& params, int64_t V) {
  ExactFirstTokens e;
  const auto p0 = exact_next(gpt, cls, torch::zeros({1, 0}, torch::kInt64), params)[0];  // [V]
  const auto x0 = torch::arange(V, torch::kInt64).view({V, 1});
  const auto p1 = exact_next(gpt, cls, x0, params);                                    // [V, V]
  e.joint01 = p0.unsqueeze(1) * p1;
  const auto pairs = torch::stack({x0.repeat({1, V}).reshape(-1), torch::arange(V, torch::kInt64).repeat(V)}, 1);
  const auto p2 = exact_next(gpt, cls, pairs, params);                                 // [V*V, V]
  e.x2 = (e.joint01.reshape({-1, 1}) * p2).sum(0);
  return e;
}
}  // namespace

TEST(SdDecoder, GreedyTokensEqualArGreedyForEveryDraftLength) {
  SamplingParams p;
  p.temperature = 0;
  p.cfg_scale = 2.0;
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
  SamplingParams p;
  p.temperature = 0;
  p.cfg_scale = 2.0;
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
  const int64_t V = 8, samples = 4000;
  SamplingParams p;
  p.cfg_scale = 2.0;
  p.temperature = 1.0;
  auto target = test::tiny_gpt(3, V), drafter = test::tiny_gpt(4, V);
  const auto exact = exact_first_tokens(target, 1, p, V);
  EXPECT_NEAR(exact.joint01.sum().item<double>(), 1.0, 1e-6);  // float32 softmax

  SdDecoder sd(target, drafter, p, 4, AcceptanceParams{}, nullptr);
  const auto got = count_first_tokens(sd, 1, samples, V);
  const auto joint = chi_square(got.joint01, exact.joint01), x2 = chi_square(got.x2, exact.x2);
  std::cout << "SD  (x0, x1): chi2 " << joint.stat << " df " << joint.df << " critical " << joint.critical()
            << "; x2: chi2 " << x2.stat << " df " << x2.df << " critical " << x2.critical() << "\n";
  EXPECT_LT(joint.stat, joint.critical());
  EXPECT_LT(x2.stat, x2.critical());

  // AR passes the same test; a relaxed rule (Cool-SD, w = 3 everywhere) does not: the test can fail.
  ArDecoder ar(target, p);
  const auto ar_counts = count_first_tokens(ar, 1, samples, V);
  const auto ar_joint = chi_square(ar_counts.joint01, exact.joint01);
  EXPECT_LT(ar_joint.stat, ar_joint.critical());
  AcceptanceParams relaxed;
  relaxed.rule = AcceptRule::kCoolSd;
  relaxed.schedule = CoolSchedule::kUniform;
  relaxed.budget = 3.0;
  SdDecoder biased(target, drafter, p, 4, relaxed, nullptr);
  const auto b = count_first_tokens(biased, 1, samples, V);
  const auto b_joint = chi_square(b.joint01, exact.joint01);
  std::cout << "AR  (x0, x1): chi2 " << ar_joint.stat << "; Cool-SD w=3: chi2 " << b_joint.stat << "\n";
  EXPECT_GT(b_joint.stat, b_joint.critical());
}

TEST(SdDecoder, JobFileErrorsNameTheField) {
  DecoderSpec spec;
  spec.name = "sd";
  spec.name_where = "job.yaml:3: decoder.name";
  spec.words["accept"] = "lanter";
  spec.where["accept"] = "job.yaml:5: decoder.accept";
  try {
    validate_decoder_spec(spec);
    FAIL() << "accepted an unknown rule";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job.yaml:5: decoder.accept: unknown acceptance rule 'lanter'", 0), 0u)
        << e.what();
  }
  spec.words.clear();
  spec.params["delta"] = 1.5;
  spec.where["delta"] = "job.yaml:6: decoder.delta";
  EXPECT_THROW(validate_decoder_spec(spec), Error);
  spec.params.clear();
  spec.params["gamma"] = 2.5;
  spec.where["gamma"] = "job.yaml:7: decoder.gamma";
  EXPECT_THROW(validate_decoder_spec(spec), Error);
  auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  model.draft_gpt_weights.clear();
  spec.params.clear();
  try {
    validate_decoder_spec(spec, model);
    FAIL() << "accepted sd without a draft GPT";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no drafters.gpt section"), std::string::npos) << e.what();
  }
}

}  // namespace vispec
