// Continuous batching (decoding/common/decode_state.h): a decoder that refills rows gives a row whose image is done
// the next sample while the other rows go on. A sample's tokens are the same whether it started with the batch or
// took a row later, and whatever the number of rows; the rows sit idle only in the last samples' tail.
#include <gtest/gtest.h>

#include "decoding/common/decoder.h"
#include "exact_distribution.h"
#include "graphed_decoders.h"
#include "tiny_models.h"

namespace vispec {
namespace {

// The request's samples decoded `rows` at a time, as a decoder that refills rows does it.
DecodeResult on_rows(Decoder& decoder, DecodeRequest r, int64_t rows) {
  r.rows = rows;
  return decoder.decode(r);
}

// The same samples in batches of their own, each starting every row together (no row refilled).
torch::Tensor in_batches(Decoder& decoder, const DecodeRequest& r, int64_t batch) {
  std::vector<torch::Tensor> tokens;
  for (int64_t first = 0; first < r.batch(); first += batch)
    tokens.push_back(decoder.decode(test::requests(first, std::min(batch, r.batch() - first))).tokens);
  return torch::cat(tokens);
}

int64_t idle(const DecodeResult& out) {
  int64_t n = 0;
  for (const auto& s : out.stats) n += s.idle_iterations;
  return n;
}

// Every decoder that refills rows, both temperatures, under CFG: 10 samples on 3 rows equal the same samples in
// batches of 3 (where each started a batch) and all 10 in one batch; every sample's statistics are its own.
// The rows sit idle only once no sample is left (9 samples on 3 rows: the last three's tail), where batches of
// three each wait for their slowest row: never more idle, and at temperature 1 less over the decoders together
// (one decoder's nine samples may happen to finish as evenly either way).
TEST(RefilledRows, ASamplesTokensAreTheSameWhetherItStartedTheBatchOrTookAFinishedRow) {
  const test::GraphedDecoderModels models;
  int64_t refilling = 0, sampled_idle = 0, sampled_batched_idle = 0, figures_seen = 0;
  for (double temperature : {0.0, 1.0}) {
    for (const auto& name : test::kGraphedDecoders) {
      const auto decoder = test::graphed_decoder(name, models, test::guided_sampling(temperature));
      if (!decoder->refills_rows()) continue;
      refilling += 1;
      const auto r = test::requests(0, 10);
      const auto refilled = on_rows(*decoder, r, 3);
      const auto where = name + " T = " + std::to_string(temperature);
      EXPECT_TRUE(torch::equal(refilled.tokens, in_batches(*decoder, r, 3))) << where;
      const auto together = decoder->decode(r);
      EXPECT_TRUE(torch::equal(refilled.tokens, together.tokens)) << where;
      ASSERT_EQ(refilled.stats.size(), 10u) << where;
      for (size_t s = 0; s < 10; ++s) {
        EXPECT_EQ(refilled.stats[s].tokens, 144) << where;
        // The sample's own forwards, whichever row it ran in: the same as in its batch of ten.
        EXPECT_EQ(refilled.stats[s].target_forwards, together.stats[s].target_forwards) << where << " sample " << s;
        EXPECT_EQ(refilled.stats[s].accepted, together.stats[s].accepted) << where << " sample " << s;
        // A decoder's own figures (GSD's bound), summed per row on the device: restarted with the row.
        for (const auto& [key, value] : together.stats[s].extra)
          if (key.rfind("gsd_", 0) == 0) {
            EXPECT_NEAR(refilled.stats[s].extra.at(key), value, 1e-9) << where << key;
            figures_seen += value > 0;
          }
      }
      int64_t batched_idle = 0;
      for (int64_t first = 0; first < 9; first += 3) batched_idle += idle(decoder->decode(test::requests(first, 3)));
      const auto nine = on_rows(*decoder, test::requests(0, 9), 3);
      EXPECT_LE(idle(nine), batched_idle) << where;
      if (temperature > 0) {  // sampled rows finish apart: refilled, they idle less, over the decoders together
        sampled_idle += idle(nine);
        sampled_batched_idle += batched_idle;
      }
    }
  }
  EXPECT_EQ(refilling, 2 * 14);
  // all but ZipAR and MuLo-SD (whose rows advance together)
  EXPECT_GT(figures_seen, 0);  // the figures compared were not all zero
  EXPECT_LT(sampled_idle, sampled_batched_idle);
}

// A decoder that does not refill rows takes more samples than rows in batches (decode_in_rows), and a request of
// fewer samples than rows decodes on as many rows as samples.
TEST(RefilledRows, DecodersThatDoNotRefillTakeBatchesOfRowsAndFewerSamplesTakeFewerRows) {
  const test::GraphedDecoderModels models;
  const auto greedy = test::guided_sampling(0.0);
  const auto zipar = test::graphed_decoder("zipar", models, greedy);
  ASSERT_FALSE(zipar->refills_rows());
  auto r = test::requests(0, 5);
  r.rows = 2;
  EXPECT_TRUE(torch::equal(decode_in_rows(*zipar, r).tokens, in_batches(*zipar, r, 2)));
  const auto sjd = test::graphed_decoder("sjd", models, greedy);
  r.rows = 20;
  EXPECT_EQ(r.row_count(), 5);
  EXPECT_TRUE(torch::equal(decode_in_rows(*sjd, r).tokens, sjd->decode(test::requests(0, 5)).tokens));
}

}  // namespace
}  // namespace vispec
