// MuLo-SD (decoding/mulo_sd.cpp): the local expansion set R_X equals the MuLo-SD paper's Eq. 6-7 on hand-made cases;
// the row-causal resamplers U_2 / D_2 round-trip shapes and a change in a later row never changes an earlier
// output row; the decoder at its two ends (tau > 1 rejects every draft: AR's tokens, at T = 0 and T = 1; tau = 0
// keeps every draft: one target forward per span) and in between (a sample's tokens and counts do not depend on
// the batch it is decoded in, although every row resamples a different set).
#include <gtest/gtest.h>

#include "core/check.h"
#include "decoding/ar.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/mulo_sd.h"
#include "models/drafters/mulo_resamplers.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

namespace {
MuloParams mulo(double tau, int64_t radius = 1, int64_t rows = 1) {
  MuloParams p;
  p.tau = tau;
  p.radius = radius;
  p.rows = rows;
  return p;
}
}  // namespace

TEST(MuloSd, LocalExpansionEqualsEquations6And7OnHandMadeCases) {
  using V = std::vector<int64_t>;
  // An 8-wide grid, drafted span rows 2-3 (cells 16..31). Reject (2, 3) = 19, radius 1: rows 1..3, columns
  // 2..4, at or after t0 = 19 and inside the span: 19, 20 on row 2 (18 precedes t0), 26, 27, 28 on row 3.
  EXPECT_EQ(local_expansion({19}, 8, 1, 16, 32), (V{19, 20, 26, 27, 28}));
  // Adding (3, 6) = 30: its window reaches back to row 2 (21, 22, 23: after t0 = 19) and to columns 5..7.
  EXPECT_EQ(local_expansion({30, 19}, 8, 1, 16, 32), (V{19, 20, 21, 22, 23, 26, 27, 28, 29, 30, 31}));
  // The left edge clips columns; rows past the span are not drafted yet.
  EXPECT_EQ(local_expansion({8}, 8, 2, 8, 24), (V{8, 9, 10, 16, 17, 18}));
  // Radius 0: the rejected cells alone; nothing rejected: nothing resampled.
  EXPECT_EQ(local_expansion({21, 17}, 8, 0, 16, 32), (V{17, 21}));
  EXPECT_TRUE(local_expansion({}, 8, 3, 16, 32).empty());
}

TEST(MuloSd, ResamplersRoundTripShapesAndAreRowCausal) {
  torch::manual_seed(3);
  torch::NoGradGuard no_grad;
  MuloResamplerConfig c;
  MuloResampler up(c, +1), down(c, -1);
  const auto low = torch::randn({2, c.embed_dim, 4, 4});
  const auto high = up(low);
  EXPECT_EQ(high.sizes(), (std::vector<int64_t>{2, c.embed_dim, 8, 8}));
  EXPECT_EQ(down(high).sizes(), low.sizes());
  // U_2: changing low-res rows >= 2 leaves high-res rows < 4 as they were and changes row 4.
  auto low2 = low.clone();
  low2.narrow(2, 2, 2).add_(1.0);
  const auto high2 = up(low2);
  EXPECT_TRUE(torch::equal(high2.narrow(2, 0, 4), high.narrow(2, 0, 4)));
  EXPECT_GT((high2.narrow(2, 4, 1) - high.narrow(2, 4, 1)).abs().max().item<double>(), 1e-4);
  // D_2: changing high-res rows >= 4 leaves low-res rows < 2 as they were and changes row 2.
  const auto base = down(high);
  auto high3 = high.clone();
  high3.narrow(2, 4, 4).add_(1.0);
  const auto changed = down(high3);
  EXPECT_TRUE(torch::equal(changed.narrow(2, 0, 2), base.narrow(2, 0, 2)));
  EXPECT_GT((changed.narrow(2, 2, 1) - base.narrow(2, 2, 1)).abs().max().item<double>(), 1e-4);
}

TEST(MuloSd, TauAboveOneRejectsEveryDraftAndIsAr) {
  test::TinyMulo m;
  const auto r = test::requests(0, 6);
  const int64_t N = 16;
  for (double temperature : {0.0, 1.0}) {
    const auto ar = ArDecoder(m.target, test::guided_sampling(temperature)).decode(r);
    for (int64_t rows : {1, 2}) {
      const auto out = m.decoder(test::guided_sampling(temperature), mulo(1.5, 1, rows)).decode(r);
      EXPECT_TRUE(torch::equal(out.tokens, ar.tokens)) << "T " << temperature << " rows " << rows;
      for (const auto& s : out.stats) {
        EXPECT_EQ(s.accepted, 0);
        EXPECT_EQ(s.drafted, N);
        EXPECT_EQ(s.extra.at("expanded"), double(N));
        // The prefill, then per span its verify forward and one forward per position after the first.
        EXPECT_EQ(s.target_forwards, 1 + N);
        // The drafter's prefill, per span one forward per drafted low-res token but the last, and one prefix
        // forward per later span: as many as the low-res grid has tokens.
        EXPECT_EQ(s.draft_forwards, N / 4);
      }
    }
  }
}

TEST(MuloSd, TauZeroKeepsEveryDraftWithOneTargetForwardPerSpan) {
  test::TinyMulo m;
  const auto r = test::requests(0, 4);
  for (int64_t rows : {1, 2}) {
    const auto out = m.decoder(test::guided_sampling(1.0), mulo(0.0, 3, rows)).decode(r);
    const int64_t spans = 4 / (2 * rows);
    for (const auto& s : out.stats) {
      EXPECT_EQ(s.accepted, 16);
      EXPECT_EQ(s.extra.at("rejected"), 0.0);
      EXPECT_EQ(s.target_forwards, 1 + spans);
      EXPECT_DOUBLE_EQ(s.mean_accepted_length(), 16.0 / double(1 + spans));
    }
    // Every token is a draft: the nearest code of U_2's output, so a token of the VQ's codebook range.
    EXPECT_GE(out.tokens.min().item<int64_t>(), 0);
    EXPECT_LT(out.tokens.max().item<int64_t>(), 64);
  }
}

TEST(MuloSd, ASampleDoesNotDependOnItsBatch) {
  test::TinyMulo m;
  const int64_t B = 6;
  // tau 0.08: on these random weights some pooled masses fall below it and most do not (checked at the end).
  const auto together = m.decoder(test::guided_sampling(1.0), mulo(0.08, 1)).decode(test::requests(0, B));
  double rejected = 0, kept = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto alone = m.decoder(test::guided_sampling(1.0), mulo(0.08, 1)).decode(test::requests(b, 1));
    EXPECT_TRUE(torch::equal(alone.tokens[0], together.tokens[b])) << "sample " << b;
    const auto &s = together.stats[size_t(b)], &a = alone.stats[0];
    EXPECT_EQ(s.target_forwards, a.target_forwards) << "sample " << b;
    EXPECT_EQ(s.accepted, a.accepted) << "sample " << b;
    // One verify per span (2 spans) and one forward per resampled position after each span's first.
    const double expanded = s.extra.at("expanded");
    EXPECT_LE(double(s.target_forwards), 1 + 2 + expanded);
    EXPECT_GE(double(s.target_forwards), 1 + 2 + expanded - 2);
    rejected += s.extra.at("rejected");
    kept += double(s.accepted);
  }
  EXPECT_GT(rejected, 0);  // the threshold both rejects and keeps drafts, so rows resample different sets
  EXPECT_GT(kept, 0);
}

TEST(MuloSd, JobFileErrorsNameTheField) {
  DecoderSpec spec;
  spec.name = "mulo_sd";
  spec.name_where = "job.yaml:3: decoder.name";
  parse_decoder(spec);
  EXPECT_EQ(parse_decoder(spec).settings<MuloParams>().tau, 1e-4);  // the paper's defaults
  EXPECT_EQ(parse_decoder(spec).settings<MuloParams>().radius, 3);
  spec.params["tau"] = -1;
  spec.where["tau"] = "job.yaml:4: decoder.tau";
  try {
    parse_decoder(spec);
    FAIL() << "accepted tau -1";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job.yaml:4: decoder.tau: must be >= 0", 0), 0u) << e.what();
  }
  spec.params.clear();
  spec.params["radius"] = 1.5;
  spec.where["radius"] = "job.yaml:5: decoder.radius";
  EXPECT_THROW(parse_decoder(spec), Error);
  spec.params.clear();
  spec.params["lambda"] = 3;  // LANTERN++'s, not MuLo-SD's
  spec.where["lambda"] = "job.yaml:5: decoder.lambda";
  EXPECT_THROW(parse_decoder(spec), Error);
}

}  // namespace vispec
