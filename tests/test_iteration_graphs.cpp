// Whole decoder iterations as one graph (decoding/floor/iteration_graphs.h), proven on the CPU: a replay runs
// none of the host bookkeeping of the caches' forwards, so after it the caches are put where the iteration
// would have left them (KvCache::follow_host); the decode state lives in buffers that a later decode of the
// same shape reuses in place; and the tokens are the same with the whole-iteration path as without it.
#include <gtest/gtest.h>

#include "decoding/floor/iteration_graphs.h"
#include "exact_distribution.h"
#include "graphed_decoders.h"
#include "models/gpt/step_graph.h"
#include "tiny_models.h"

namespace vispec {
namespace {

// A tiny GPT on a 12x12 grid: 144 tokens, so that iterations cross length buckets (64, 128, 145 keys).
Gpt grid12_gpt(uint64_t seed) { return test::tiny_grid_gpt(seed, 12); }

struct HostCheck {
  HostCheck() { set_step_graph_host_check(true); }
  ~HostCheck() { set_step_graph_host_check(false); }
};

TEST(IterationGraphs, AReplayWouldLeaveTheCachesWhereTheIterationLeavesThem) {
  const test::GraphedDecoderModels models;
  for (double temperature : {0.0, 1.0}) {
    for (double cfg : {1.0, 3.0}) {  // one stream and both CFG streams
      auto p = test::guided_sampling(temperature);
      p.cfg_scale = cfg;
      for (const auto& name : test::kGraphedDecoders) {
        const auto decoder = test::graphed_decoder(name, models, p);
        const auto r = test::requests(0, 3);
        const auto want = decoder->decode(r).tokens;
        const HostCheck check;  // from here each steady iteration checks follow_host against the iteration's
        // Two decodes: the first records each key's host bookkeeping, then every later iteration of that key (in
        // this decode and the next) must move the caches' host state exactly as a replay would.
        EXPECT_TRUE(torch::equal(decoder->decode(r).tokens, want)) << name << " T = " << temperature << ", cfg " << cfg;
        EXPECT_TRUE(torch::equal(decoder->decode(r).tokens, want)) << name << " T = " << temperature << ", cfg " << cfg;
      }
    }
  }
}

TEST(IterationGraphs, ACachesHostStateThatAReplayWouldMissIsCaught) {
  // A step that moves a cache's host lengths by an amount that depends on them (not a static cache's
  // bookkeeping) cannot be replayed: the check says so on the step's second run.
  auto gpt = grid12_gpt(9);
  KvCache cache = gpt->make_cache(2, 8);
  cache.use_device_lengths();
  torch::Tensor flag = torch::zeros({1});
  StepGraphs graphs(torch::kCPU, {&flag}, {&flag});
  const HostCheck check;
  const auto step = [&] {
    std::vector<int64_t> delta{cache.length(0) == 0 ? 2 : 1, 1};
    cache.plan_static_block(2);
    cache.shift_lengths(delta, torch::tensor(delta));
  };
  graphs.run({2, 2, 64}, step, {&cache});                                // recorded: row 0 moved by 2
  EXPECT_THROW(graphs.run({2, 2, 64}, step, {&cache}), std::exception);  // moves it by 1: a replay would by 2
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
