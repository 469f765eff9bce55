// Speculative Jacobi decoding and SCD, its coupled drafts (decoding/sjd.cpp): greedy tokens identical to AR's for
// every window, and at temperature 1 the first tokens' distribution matches the exact target distribution by
// chi-square, whichever coupling carries the drafts.
#include <gtest/gtest.h>

#include "decoding/ar.h"
#include "decoding/sjd.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

TEST(SjdDecoder, GreedyTokensEqualArGreedyForEveryWindow) {
  const auto p = test::guided_sampling(0);
  auto target = test::tiny_gpt(1);
  const auto r = test::requests(0, 6);
  const auto reference = ArDecoder(target, p).decode(r).tokens;
  for (int64_t window : {1, 4, 15, 40}) {
    const auto out = SjdDecoder(target, p, window).decode(r);
    EXPECT_TRUE(torch::equal(out.tokens, reference)) << "window " << window;
    for (const auto& s : out.stats) {
      EXPECT_EQ(s.tokens, 16);
      EXPECT_LE(s.target_forwards, 16);  // the prefill gives token 0; every forward after commits >= 1
      EXPECT_EQ(s.draft_forwards, 0);
    }
  }
}

TEST(SjdDecoder, SamplesTheExactTargetDistributionAtTemperatureOne) {
  const int64_t V = 8;
  const auto p = test::guided_sampling(1.0);
  auto target = test::tiny_gpt(3, V);
  SjdDecoder sjd(target, p, 6);
  EXPECT_TRUE(test::first_token_fit(sjd, target, p, V, "SJD").passes());
  SampleStats total;
  for (const auto& s : sjd.decode(test::requests(0, 100, 1)).stats) total += s;
  std::cout << "SJD tokens per target forward: " << total.mean_accepted_length() << "\n";
  EXPECT_GT(total.accepted, 0);  // drafts were accepted: the Jacobi carry works
}

TEST(ScdDecoder, GreedyTokensEqualArGreedyWithEitherCoupling) {
  const auto p = test::guided_sampling(0);
  auto target = test::tiny_gpt(1);
  const auto r = test::requests(0, 6);
  const auto reference = ArDecoder(target, p).decode(r).tokens;
  for (auto coupling : {Coupling::kMaximal, Coupling::kGumbel})
    for (int64_t window : {2, 15}) {
      SjdDecoder scd(target, p, window, AcceptanceParams{}, nullptr, coupling);
      EXPECT_EQ(scd.name(), "scd");
      EXPECT_TRUE(torch::equal(scd.decode(r).tokens, reference)) << "window " << window;
    }
}

// The carried drafts are coupled to the drafts they replace, and still samples of p: the first tokens' law is
// the target's (x2 is often a carried draft, tested in the second iteration), and the drafts are accepted.
TEST(ScdDecoder, SamplesTheExactTargetDistributionAtTemperatureOneWithEitherCoupling) {
  const int64_t V = 8;
  const auto p = test::guided_sampling(1.0);
  auto target = test::tiny_gpt(3, V);
  for (auto coupling : {Coupling::kMaximal, Coupling::kGumbel}) {
    const std::string label = coupling == Coupling::kMaximal ? "SCD maximal" : "SCD gumbel";
    SjdDecoder scd(target, p, 6, AcceptanceParams{}, nullptr, coupling);
    EXPECT_TRUE(test::first_token_fit(scd, target, p, V, label).passes()) << label;
    SampleStats total;
    for (const auto& s : scd.decode(test::requests(0, 100, 1)).stats) total += s;
    std::cout << label << " tokens per target forward: " << total.mean_accepted_length() << "\n";
    EXPECT_GT(total.accepted, 0) << label;
  }
}

// Whole images of a 2x2-grid model over 4 codes, 80000 samples against the exact law of all 256 sequences: SJD and
// SCD with either coupling pass; SCD keeping a kept draft's old q, as its released maximal-coupling code does,
// fails the same test (the test can tell a biased sampler).
TEST(ScdDecoder, WholeImagesFollowTheTargetAndTheReleasedBookkeepingDoesNot) {
  const int64_t V = 4, N = 4, samples = 80000;
  const auto p = test::guided_sampling(1.0);
  auto target = test::tiny_sequence_gpt(7, 2, V);
  const auto exact = test::exact_sequences(target, 1, p, V, N);
  const auto fit = [&](Coupling coupling) {
    SjdDecoder decoder(target, p, 3, AcceptanceParams{}, nullptr, coupling);
    const auto chi = test::chi_square(test::count_sequences(decoder, 1, samples, V, N), exact);
    std::cout << "coupling " << int(coupling) << ": chi2 " << chi.stat << " df " << chi.df << " critical "
              << chi.critical() << "\n";
    return chi;
  };
  for (auto coupling : {Coupling::kJacobi, Coupling::kMaximal, Coupling::kGumbel}) {
    const auto chi = fit(coupling);
    EXPECT_LT(chi.stat, chi.critical()) << int(coupling);
  }
  const auto biased = fit(Coupling::kMaximalKeepsOldQ);
  EXPECT_GT(biased.stat, biased.critical()) << "the released bookkeeping passed: the test has no power";
}

}  // namespace vispec
