// SSD (decoding/ssd.cpp) on the embedded model with its shipped heads: at T = 0 with as many rounds as a row
// has cells (kv = 1), or as two rows have (kv = 2, staged), every row converges to AR's greedy row, so the
// image equals AR greedy (each round fixes one more cell: a Jacobi sweep); the forward count is the first
// row's speculative iterations plus the schedule's; job-file errors name the field.
#include <gtest/gtest.h>

#include "core/check.h"
#include "decoding/ar.h"
#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/ssd.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "exact_distribution.h"

namespace vispec {

namespace {
struct EmbeddedSsd {
  ModelConfig model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  Gpt target{model.gpt};
  SsdHeads heads = load_ssd_heads(model.ssd_heads, model);
  EmbeddedSsd() {
    load_weights(*target, model.gpt_weights);
    target->eval();
    heads->eval();
  }
};

// Target forwards of the first row: total less the prefill and the schedule after it.
int64_t first_row_iterations(const SampleStats& s, int64_t H, const SsdParams& p) {
  return s.target_forwards - 1 - ssd_forwards_after_first_row(H, p);
}
}  // namespace

TEST(SsdDecoder, ScheduleCountsFollowTheStaging) {
  SsdParams p;  // kv 1, r 2: r + 1 per row after the first, and one commit of the first row's last token
  EXPECT_EQ(ssd_forwards_after_first_row(16, p), 1 + 15 * 3);
  p.r = 0;
  EXPECT_EQ(ssd_forwards_after_first_row(16, p), 1 + 15);
  p.kv = 2, p.b = 1, p.i = 1;  // 7 pairs of rows at b + 1 + i + 1, then one row at b + 1
  EXPECT_EQ(ssd_forwards_after_first_row(16, p), 1 + 7 * 4 + 2);
  // The paper's Janus-Pro count at r = 2 on 24 x 24 is 80 = 11 + 23 (r + 1): ours adds the one commit.
  p = SsdParams{};
  EXPECT_EQ(ssd_forwards_after_first_row(24, p), 1 + 23 * 3);
}

TEST(SsdDecoder, GreedyWithAFullSweepOfRoundsEqualsAr) {
  EmbeddedSsd e;
  const auto sampling = test::guided_sampling(0);
  const auto r = test::requests(0, 3);
  const int64_t W = e.model.gpt.grid_size;
  const auto ar = ArDecoder(e.target, sampling).decode(r).tokens;
  SsdParams one;
  one.r = W;
  SsdParams two;
  two.kv = 2, two.b = 2 * W, two.i = 0;
  for (const auto& p : {one, two}) {
    const auto out = SsdDecoder(e.target, e.heads, sampling, p).decode(r);
    EXPECT_TRUE(torch::equal(out.tokens, ar)) << "kv " << p.kv;
    for (const auto& s : out.stats) {
      const int64_t first = first_row_iterations(s, W, p);
      EXPECT_GE(first, (W - 1 + p.kh) / (p.kh + 1));  // at most kh drafts and a bonus token per iteration
      EXPECT_LE(first, W - 1);
    }
  }
  // Fewer rounds than cells: faster and, greedy, not AR's image (the drafts are not that good).
  SsdParams fast;  // r = 2
  const auto out = SsdDecoder(e.target, e.heads, sampling, fast).decode(r);
  EXPECT_FALSE(torch::equal(out.tokens, ar));
  EXPECT_TRUE(torch::equal(out.tokens.narrow(1, 0, W), ar.narrow(1, 0, W)));  // the first row is exact SD
  SampleStats total;
  for (const auto& s : out.stats) total += s;
  std::cout << "SSD r = 2, greedy: " << total.mean_accepted_length() << " tokens per target forward, "
            << total.acceptance_rate() << " of drafts kept by their first verification\n";
  EXPECT_GT(total.mean_accepted_length(), 4.0);
}

// Any acceptance rule composes with SSD's heads: LANTERN's relaxed rule keeps more of the same drafts than
// the exact one (same samples, same seeds), in the first row's chains and in the rounds alike.
TEST(SsdDecoder, ARelaxedRuleKeepsMoreDrafts) {
  EmbeddedSsd e;
  const auto sampling = test::guided_sampling(1);
  const auto r = test::requests(0, 8);
  AcceptanceParams lantern;
  lantern.rule = AcceptRule::kLantern;
  lantern.k = 50;
  lantern.delta = 0.4;
  VqModel vq(e.model.vq);
  load_weights(*vq, e.model.vq_weights);
  const auto neighbours =
      std::make_shared<const CodebookNeighbours>(CodebookNeighbours::build(vq->quantize->embedding->weight, lantern.k));
  SampleStats exact_total, lantern_total;
  for (const auto& s : SsdDecoder(e.target, e.heads, sampling, SsdParams{}).decode(r).stats) exact_total += s;
  for (const auto& s : SsdDecoder(e.target, e.heads, sampling, SsdParams{}, lantern, neighbours).decode(r).stats)
    lantern_total += s;
  std::cout << "SSD r = 2, T = 1: drafts kept " << exact_total.acceptance_rate() << " (exact), "
            << lantern_total.acceptance_rate() << " (LANTERN k 50, delta 0.4)\n";
  EXPECT_GT(lantern_total.acceptance_rate(), exact_total.acceptance_rate() + 0.02);
}

TEST(SsdDecoder, JobFileErrorsNameTheField) {
  DecoderSpec spec;
  spec.name = "ssd";
  spec.name_where = "job.yaml:3: decoder.name";
  parse_decoder(spec);
  spec.params["r"] = -1;
  spec.where["r"] = "job.yaml:4: decoder.r";
  try {
    parse_decoder(spec);
    FAIL() << "accepted r = -1";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job.yaml:4: decoder.r: must be a whole number in [0, 1024]", 0), 0u)
        << e.what();
  }
  spec.params.clear();
  spec.params["kv"] = 3;  // the shipped heads have 2 vertical heads
  spec.where["kv"] = "job.yaml:4: decoder.kv";
  EmbeddedSsd e;
  VqModel vq(e.model.vq);
  try {
    const auto parsed = parse_decoder(spec);
    make_decoder(parsed, load_decoder_models(parsed, e.model, e.target, vq, torch::kCPU));
    FAIL() << "accepted kv = 3";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("job.yaml:4: decoder.kv: kh 5, kv 3 but"), std::string::npos) << err.what();
  }
}

}  // namespace vispec
