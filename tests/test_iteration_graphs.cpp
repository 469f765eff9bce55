// Whole decoder iterations as one graph (decoding/common/iteration_graphs.h), proven on the CPU: a replay runs
// none of the host bookkeeping of the caches' forwards, so the caches' host plans follow the device instead
// (settled on the lengths the iteration's read brings back, or on lengths the host knew), and never fall below
// it; the decode state lives in buffers that a later decode of the same shape reuses in place; and the tokens
// are the same with the whole-iteration path as without it.
#include <gtest/gtest.h>

#include "decoding/common/iteration_graphs.h"
#include "exact_distribution.h"
#include "graphed_decoders.h"
#include "models/gpt/step_graph.h"
#include "tiny_models.h"

namespace vispec {
namespace {

// A tiny GPT on a 12x12 grid: 144 tokens, so that iterations cross length buckets (64, 128, 145 keys).
Gpt grid12_gpt(uint64_t seed) { return test::tiny_grid_gpt(seed, 12); }

struct PlanCheck {
  PlanCheck() { set_kv_plan_check(true); }
  ~PlanCheck() { set_kv_plan_check(false); }
};

// Every graphed decoder, both temperatures, one stream and both CFG streams: each cache's host plan is settled
// on exactly its device lengths (from the read, or as the decoder knew them) and never plans a block below
// them; a second decode gives the same tokens.
TEST(IterationGraphs, TheCachesHostPlansAreSettledOnTheirDeviceLengthsAndNeverFallBelowThem) {
  const test::GraphedDecoderModels models;
  for (double temperature : {0.0, 1.0}) {
    for (double cfg : {1.0, 3.0}) {
      auto p = test::guided_sampling(temperature);
      p.cfg_scale = cfg;
      for (const auto& name : test::kGraphedDecoders) {
        const auto decoder = test::graphed_decoder(name, models, p);
        const auto r = test::requests(0, 3);
        const auto want = decoder->decode(r).tokens;
        const PlanCheck check;
        EXPECT_TRUE(torch::equal(decoder->decode(r).tokens, want)) << name << " T = " << temperature << ", cfg " << cfg;
      }
    }
  }
}

// An iteration whose body commits on the device: after it, the cache's host plan is what the device holds,
// brought back by the iteration's read, or what the host said it knew (and, under the check, a wrong "known"
// length is caught). The body's own host bookkeeping is not what a replay would leave, so it never counts.
TEST(IterationGraphs, TheReadOrTheKnownLengthsSettleThePlanNotTheBody) {
  auto gpt = grid12_gpt(9);
  KvCache cache = gpt->make_cache(2, 8, /*static_lengths=*/true);
  IterationGraphs graphs;
  auto rows = graphs.rows(test::requests(0, 2), 144, 5, torch::kCPU);
  const std::vector<const torch::Tensor*> lengths{&cache.lengths_on_device()};
  const auto body = [&] {
    cache.plan_static_block(3, 3);
    cache.advance(torch::tensor({3, 1}, torch::kInt64));  // device counts: the plan counts the block, 3 each
    EXPECT_EQ(cache.lengths(), (std::vector<int64_t>{3, 3}));
  };
  graphs.run(rows, {2, 3}, lengths, {&cache}, body);
  rows.settle_chain(-1);
  EXPECT_EQ(cache.lengths(), (std::vector<int64_t>{3, 1}));
  // Known lengths: the body commits its block whole.
  graphs.run(rows, {2, 2}, lengths, {&cache},
             [&] {
               cache.plan_static_block(2, 2);
               cache.advance();
             },
             {{5, 3}});
  EXPECT_EQ(cache.lengths(), (std::vector<int64_t>{5, 3}));
  const PlanCheck check;
  EXPECT_THROW(graphs.run(rows, {2, 2}, lengths, {&cache},
                          [&] {
                            cache.plan_static_block(2, 2);
                            cache.advance();
                          },
                          {{7, 6}}),
               std::exception);
}

TEST(IterationGraphs, ADecodeOfTheSameShapeReusesTheStateBuffersInPlace) {
  const auto target = grid12_gpt(9);
  IterationGraphs graphs;
  const auto r = test::requests(0, 3);
  auto first = graphs.rows(r, 144, 5, torch::kCPU);
  first.tokens.fill_(7);
  const auto where = first.tokens.data_ptr(), n_where = first.n.data_ptr();
  auto second = graphs.rows(test::requests(3, 3), 144, 5, torch::kCPU);
  EXPECT_EQ(second.tokens.data_ptr(), where);
  EXPECT_EQ(second.n.data_ptr(), n_where);
  EXPECT_EQ(second.tokens.sum().item<int64_t>(), 0);                    // reset in place for the new decode
  auto other = graphs.rows(test::requests(0, 2), 144, 5, torch::kCPU);  // another batch: buffers of its own
  EXPECT_NE(other.tokens.data_ptr(), where);
}

}  // namespace
}  // namespace vispec
