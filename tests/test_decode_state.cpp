// Unit tests of the pieces every decoder stands on (docs/decoding_common.md), each on its own: the decode state
// (DecodeState, its chain and tree commits), guidance and its cache commits (CfgModel, its pooled static caches),
// and the chain verdicts (verify_chain, verify_chain_greedy, commit_chain) on hand-made distributions whose
// answers are known.
#include <gtest/gtest.h>

#include "core/rng.h"
#include "decoding/common/cfg_model.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/verify.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

namespace {
DecodeRequest three_rows() {
  auto r = test::requests(0, 3);
  r.seed = 11;
  return r;
}
torch::Tensor i64(std::vector<int64_t> v) { return torch::tensor(v, torch::kInt64); }
}  // namespace

TEST(DecodeState, PositionsAdvanceAndTheFirstTokenIsArs) {
  const auto r = three_rows();
  DecodeState rows(r, /*cells=*/16, /*pad=*/3, torch::kCPU);
  EXPECT_EQ(rows.tokens.sizes(), (std::vector<int64_t>{3, 19}));
  // Token 0 from logits: AR's draw (the kSample uniform at position 0 of each sample).
  const auto logits = torch::randn({3, 2, 64});
  const auto p = test::guided_sampling(1.0);
  rows.start(logits, p);
  const auto u = uniforms(r.seed, r.sample_ids, 0, Purpose::kSample);
  EXPECT_TRUE(torch::equal(rows.tokens.select(1, 0), sample_from_probs(target_probs(logits.select(1, 1), p), u)));
  EXPECT_EQ(rows.committed, (std::vector<int64_t>{1, 1, 1}));
  // A chain commit: row 0 accepted 1 of 2 drafts (advances 2), row 1 none of 0 (a chain cut to nothing,
  // advances 1), row 2 all 3 and its bonus would pass the image's end (16 cells): it advances 3 to 4, not 5.
  const auto before = rows.tokens.clone();
  rows.n.copy_(i64({1, 1, 13}));
  rows.committed = {1, 1, 13};
  const auto drafts = i64({21, 22, 23, 31, 32, 33, 41, 42, 43}).view({3, 3});
  const auto advance =
      rows.commit_chain_on_device(drafts, ChainVerdict{i64({1, 0, 3}), i64({50, 51, 52})}, i64({2, 0, 3}), 16);
  EXPECT_EQ(rows.committed, (std::vector<int64_t>{1, 1, 13}));  // the host's counts wait for the read
  const auto kept = rows.settle_chain(16);
  EXPECT_TRUE(torch::equal(advance, kept.on_device));
  EXPECT_EQ(kept.host, (std::vector<int64_t>{2, 1, 3}));
  EXPECT_TRUE(torch::equal(kept.on_device, i64({2, 1, 3})));
  EXPECT_EQ(rows.committed, (std::vector<int64_t>{3, 2, 16}));
  EXPECT_TRUE(torch::equal(rows.n, i64({3, 2, 16})));
  EXPECT_TRUE(torch::equal(rows.tokens.select(0, 0).narrow(0, 1, 2), i64({21, 50})));
  EXPECT_EQ(rows.tokens[1][1].item<int64_t>(), 51);
  EXPECT_TRUE(torch::equal(rows.tokens.select(0, 2).narrow(0, 13, 3), i64({41, 42, 43})));  // no bonus at cell 16
  EXPECT_TRUE(torch::equal(rows.tokens.select(0, 2).narrow(0, 16, 3), before.select(0, 2).narrow(0, 16, 3)));
  EXPECT_EQ(rows.stats[0].drafted, 2);
  EXPECT_EQ(rows.stats[0].accepted, 1);
  EXPECT_EQ(rows.stats[2].accepted, 3);
  // Positions follow each row and stop at the last cell; a row whose image is full is no longer active, and
  // the loop runs while one is.
  EXPECT_TRUE(torch::equal(rows.positions(0, 2), i64({3, 4, 2, 3, 15, 15}).view({3, 2})));
  EXPECT_EQ(rows.active(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(rows.active(3), (std::vector<int64_t>{1}));
  EXPECT_TRUE(
      torch::equal(rows.tokens_at(-1).view({3}), rows.tokens.gather(1, i64({2, 1, 15}).view({3, 1})).view({3})));
  EXPECT_TRUE(rows.next_iteration());
  EXPECT_TRUE(rows.next_iteration());
  EXPECT_TRUE(torch::equal(rows.iteration, torch::ones({3}, torch::kInt64)));  // each row's, counted from 0
  EXPECT_FALSE(rows.next_iteration(2));
}

TEST(DecodeState, ATreeWalksAcceptedPathIsCommittedAsAChain) {
  // Trees of 4 nodes; the read buffer holds paths of 4 entries, one more than this walk's.
  DecodeState rows(three_rows(), /*cells=*/16, /*pad=*/4, torch::kCPU, nullptr, /*path_width=*/4);
  rows.tokens.select(1, 0).copy_(i64({7, 8, 9}));
  // Row 0 at its first cell; row 1 two cells before its image's end; row 2 finished.
  rows.n.copy_(i64({1, 14, 16}));
  rows.committed = {1, 14, 16};
  EXPECT_EQ(rows.newest_index(), (std::vector<int64_t>{0, 13, 15}));
  rows.tokens[1][13] = 8;
  const auto before = rows.tokens.clone();
  const auto node_tokens = i64({7, 21, 22, 23, 8, 31, 32, 33, 9, 41, 42, 43}).view({3, 4});
  // Row 0 accepted node 2 and sampled 60 after it; row 1 accepted nodes 1 and 3, which fill its image (nothing
  // sampled); row 2's walk is whatever a finished row's is, and changes nothing.
  TreeVerdict v;
  v.path = i64({0, 2, -1, 0, 1, 3, 0, -1, -1}).view({3, 3});
  v.accepted = i64({1, 2, 0});
  v.next = i64({60, 61, 62});
  v.sampled = torch::tensor(std::vector<uint8_t>{1, 0, 1}).to(torch::kBool);
  v.tried = i64({2, 2, 3});
  rows.commit_tree_on_device(v, node_tokens);
  const auto paths = rows.settle_tree();
  EXPECT_EQ(paths, (std::vector<std::vector<int64_t>>{{0, 2}, {0, 1, 3}, {}}));
  EXPECT_EQ(rows.committed, (std::vector<int64_t>{3, 16, 16}));
  EXPECT_TRUE(torch::equal(rows.n, i64({3, 16, 16})));
  EXPECT_TRUE(torch::equal(rows.tokens.select(0, 0).narrow(0, 0, 4), i64({7, 22, 60, 0})));
  EXPECT_TRUE(torch::equal(rows.tokens.select(0, 1).narrow(0, 13, 3), i64({8, 31, 33})));
  EXPECT_TRUE(torch::equal(rows.tokens.select(0, 1).narrow(0, 16, 4), before.select(0, 1).narrow(0, 16, 4)));
  EXPECT_TRUE(torch::equal(rows.tokens.select(0, 2), before.select(0, 2)));
  EXPECT_EQ(rows.stats[0].accepted, 1);
  EXPECT_EQ(rows.stats[0].drafted, 2);
  EXPECT_EQ(rows.stats[1].accepted, 2);
  EXPECT_EQ(rows.stats[2].drafted, 0);  // a finished row's walk is not counted
  EXPECT_EQ(rows.active(), (std::vector<int64_t>{0}));
}

// Every iteration counts for every row of the batch, and as idle for the rows that had already finished (at the
// limit: the image, or a loop's own, as SSD's first row): the share of row-iterations spent on finished rows.
TEST(DecodeState, IterationsCountIdleForRowsThatHadFinished) {
  DecodeState rows(three_rows(), /*cells=*/16, /*pad=*/0, torch::kCPU);
  rows.committed = {16, 5, 4};
  ASSERT_TRUE(rows.next_iteration());
  rows.committed = {16, 16, 4};
  ASSERT_TRUE(rows.next_iteration());
  ASSERT_TRUE(rows.next_iteration(/*limit=*/5));  // a loop up to cell 5: row 1 and row 0 sit it out
  rows.committed = {16, 16, 16};
  EXPECT_FALSE(rows.next_iteration());  // no row left: not an iteration
  std::vector<int64_t> batch, idle;
  for (const auto& s : rows.stats) {
    batch.push_back(s.batch_iterations);
    idle.push_back(s.idle_iterations);
  }
  EXPECT_EQ(batch, (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(idle, (std::vector<int64_t>{3, 2, 0}));
}

TEST(CfgModel, GuidedLogitsMixTheTwoStreamsAndCommitsKeepBoth) {
  const auto gpt = test::tiny_gpt(3);
  torch::NoGradGuard no_grad;
  CfgModel guided(gpt, 3.0), plain(gpt, 1.0);
  Conditions c;
  c.class_ids = i64({0, 2});
  auto cache = guided.make_cache(2, 4);
  EXPECT_EQ(cache.batch(), 4);  // [cond; uncond]
  const auto out = guided.prefill(cache, c);
  cache.advance();
  // The same prefill through the unguided model, once per stream.
  auto cond_cache = plain.make_cache(2), null_cache = plain.make_cache(2);
  const auto cond = plain.prefill(cond_cache, c).logits;
  Conditions null;
  null.class_ids = i64({3, 3});  // the null class of a 3-class model
  const auto uncond = plain.prefill(null_cache, null).logits;
  EXPECT_TRUE(torch::allclose(out.logits, uncond + 3.0 * (cond - uncond), 1e-5, 1e-5));
  // A block of 3, then sample 0 keeps 2 entries and sample 1 none, given once per sample: both streams of each
  // sample follow, in a dynamic cache and in a static one (on its device lengths).
  const auto paths = torch::tensor(std::vector<int64_t>{0, 1, -1, -1}).view({2, 2});
  guided.decode_block(cache, i64({5, 6, 7, 8, 9, 10}).view({2, 3}), i64({0, 1, 2, 0, 1, 2}).view({2, 3}),
                      causal_mask(3));
  cache.keep_paths(paths);
  EXPECT_EQ(cache.lengths(), (std::vector<int64_t>{3, 1, 3, 1}));
  auto pooled = guided.make_cache(2, 4, /*static_steps=*/true);
  guided.prefill(pooled, c);
  pooled.advance();
  guided.decode_block(pooled, i64({5, 6, 7, 8, 9, 10}).view({2, 3}), i64({0, 1, 2, 0, 1, 2}).view({2, 3}),
                      causal_mask(3));
  pooled.keep_paths(paths);
  EXPECT_TRUE(torch::equal(pooled.lengths_on_device(), i64({3, 1, 3, 1})));
}

TEST(CfgModel, PooledStaticCachesAreReusedOnlyWhenFree) {
  const auto gpt = test::tiny_gpt(4);
  CfgModel target(gpt, 2.0);
  const void* first_keys = nullptr;
  {
    auto a = target.make_cache(2, 3, /*static_steps=*/true);
    auto b = target.make_cache(2, 3, /*static_steps=*/true);  // a is in use: another pooled cache
    ASSERT_TRUE(a.device_lengths() && b.device_lengths());
    EXPECT_NE(a.lengths_on_device().data_ptr(), b.lengths_on_device().data_ptr());
    first_keys = a.lengths_on_device().data_ptr();
  }
  auto again = target.make_cache(2, 3, /*static_steps=*/true);  // both free: the first is handed out again
  EXPECT_EQ(again.lengths_on_device().data_ptr(), first_keys);
  EXPECT_EQ(again.length(0), 0);
  EXPECT_EQ(again.lengths_on_device().sum().item<int64_t>(), 0);
  EXPECT_FALSE(target.make_cache(2, 3).device_lengths());  // not asked for: dynamic
}

TEST(VerifyChain, GreedyAcceptsTheLeadingMatchesAndTakesTheTargetsNextToken) {
  ChainRule rule;  // exact
  // Row 0: drafts 4 5 6 against argmaxes 4 5 9 | 1 -> 2 accepted, next 9. Row 1: first draft wrong -> 0, next 7.
  // Row 2: all three right -> 3, next the bonus argmax 3. Row 3: only 1 draft takes part -> 1, next 5.
  const auto drafts = i64({4, 5, 6, 1, 1, 1, 2, 2, 2, 8, 0, 0}).view({4, 3});
  const auto target = i64({4, 5, 9, 1, 7, 1, 1, 1, 2, 2, 2, 3, 8, 5, 0, 0}).view({4, 4});
  const auto count = i64({3, 3, 3, 1});
  const auto v = verify_chain_greedy(rule, target, drafts, count, ChainUniforms{});
  EXPECT_TRUE(torch::equal(v.accepted, i64({2, 0, 3, 1})));
  EXPECT_TRUE(torch::equal(v.next, i64({9, 7, 3, 5})));
  // commit_chain writes each row's accepted drafts and its next token after n, never past the image (N = 7).
  auto tokens = torch::zeros({4, 11}, torch::kInt64);
  commit_chain(tokens, i64({0, 2, 4, 7}), /*N=*/7, drafts, v);  // row 3: a full image (n = N)
  EXPECT_TRUE(torch::equal(tokens[0].narrow(0, 0, 4), i64({4, 5, 9, 0})));
  EXPECT_TRUE(torch::equal(tokens[1].narrow(0, 2, 2), i64({7, 0})));
  EXPECT_TRUE(torch::equal(tokens[2].narrow(0, 4, 4), i64({2, 2, 2, 0})));  // the next token falls past N
  EXPECT_EQ(tokens[3].sum().item<int64_t>(), 0);
}

TEST(VerifyChain, ExactRuleAcceptsDraftsTheTargetAgreesWithAndResamplesTheRest) {
  ChainRule rule;
  const int64_t V = 4;
  // p puts all mass on token 1 at every position. Row 0 drafts 1, 1 with q = p: both accepted (probability 1),
  // then the bonus sample is 1. Row 1 drafts 2 (p = 0): rejected at once, and the rejection distribution
  // (p - q)+ is all on 1.
  const auto p = torch::zeros({2, 3, V}).index_fill_(2, i64({1}), 1.0);
  auto q = torch::zeros({2, 2, V});
  q.select(0, 0).index_fill_(1, i64({1}), 1.0);
  q.select(0, 1).index_fill_(1, i64({2}), 1.0);
  const auto drafts = i64({1, 1, 2, 2}).view({2, 2});
  ChainUniforms u{torch::full({2, 2}, 0.999, torch::kFloat64), torch::full({2, 3}, 0.5, torch::kFloat64),
                  torch::full({2, 3}, 0.5, torch::kFloat64)};
  const auto v = verify_chain(rule, p, q, drafts, i64({2, 2}), u);
  EXPECT_TRUE(torch::equal(v.accepted, i64({2, 0})));
  EXPECT_TRUE(torch::equal(v.next, i64({1, 1})));
}

}  // namespace vispec
