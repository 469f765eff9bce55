// Whole decoder iterations as one graph (decoding/floor/iteration_graphs.h), proven on the CPU: a replay runs
// none of the host bookkeeping of the caches' forwards, so after it the caches are put where the iteration
// would have left them (KvCache::follow_host); the decode state lives in buffers that a later decode of the
// same shape reuses in place; and the tokens are the same with the whole-iteration path as without it.
#include <gtest/gtest.h>

#include "decoding/eagle1.h"
#include "decoding/eagle2.h"
#include "decoding/mulo_sd.h"
#include "decoding/sd.h"
#include "decoding/sjd.h"
#include "decoding/ssd.h"
#include "decoding/zipar.h"
#include "models/gpt/step_graph.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {
namespace {

// A tiny GPT on a 12x12 grid: 144 tokens, so that iterations cross length buckets (64, 128, 145 keys).
Gpt grid12_gpt(uint64_t seed) { return test::tiny_grid_gpt(seed, 12); }

// LANTERN's neighbour table over a random codebook of the model's vocabulary.
std::shared_ptr<const CodebookNeighbours> random_neighbours(const Gpt& gpt, int64_t k) {
  torch::manual_seed(5);
  return std::make_shared<const CodebookNeighbours>(
      CodebookNeighbours::build(torch::randn({gpt->config().vocab_size, 8}), k));
}

struct HostCheck {
  HostCheck() { set_step_graph_host_check(true); }
  ~HostCheck() { set_step_graph_host_check(false); }
};

TEST(IterationGraphs, AReplayWouldLeaveTheCachesWhereTheIterationLeavesThem) {
  const auto target = grid12_gpt(9), drafter = grid12_gpt(10);
  const auto eagle = test::tiny_eagle_drafter(target->config(), 2);
  AcceptanceParams lantern;  // LANTERN's rule on EAGLE-2's trees, Cool-SD's on EAGLE-1's: their tables too
  lantern.rule = AcceptRule::kLantern;
  lantern.k = 4;
  lantern.delta = 0.2;
  AcceptanceParams cool;
  cool.rule = AcceptRule::kCoolSd;
  AdtParams adt;  // ADT-Tree's shapes move within depth 1 .. 4 and top-k 2 .. 4
  adt.step_k = 1;
  adt.min_k = 2;
  adt.max_k = 4;
  adt.max_depth = 4;
  torch::manual_seed(3);
  SsdHeads heads(target->config(), 3, 2);
  heads->eval();
  const test::TinyMulo tiny_mulo;  // MuLo-SD's spans draft as one graph each (a 4x4 image: 2 rows per span)
  MuloParams mulo;
  mulo.tau = 0.08;
  mulo.radius = 1;
  for (double temperature : {0.0, 1.0}) {
    for (double cfg : {1.0, 3.0}) {  // one stream and both CFG streams
      auto p = test::guided_sampling(temperature);
      p.cfg_scale = cfg;
      std::vector<std::pair<std::string, std::unique_ptr<Decoder>>> decoders;
      decoders.emplace_back("sd", std::make_unique<SdDecoder>(target, drafter, p, 4, AcceptanceParams{}, nullptr));
      decoders.emplace_back("sjd", std::make_unique<SjdDecoder>(target, p, 6));
      decoders.emplace_back("ssd", std::make_unique<SsdDecoder>(target, heads, p, SsdParams{3, 2, 2, 2, 1}));
      decoders.emplace_back("eagle2", std::make_unique<Eagle2Decoder>("eagle2", target, eagle, p, TreeShape{3, 2, 8},
                                                                      AcceptanceParams{}, nullptr));
      decoders.emplace_back("lantern", std::make_unique<Eagle2Decoder>("lantern", target, eagle, p, TreeShape{2, 3, 8},
                                                                       lantern, random_neighbours(target, lantern.k)));
      decoders.emplace_back(
          "eagle1", std::make_unique<Eagle1Decoder>("eagle1", target, eagle, p, named_static_tree("naive_extend_57"),
                                                    AcceptanceParams{}, nullptr));
      decoders.emplace_back(
          "coolsd", std::make_unique<Eagle1Decoder>("coolsd", target, eagle, p, named_static_tree("naive_extend_57"),
                                                    cool, nullptr));
      decoders.emplace_back("adt_tree",
                            std::make_unique<Eagle2Decoder>("adt_tree", target, eagle, p, TreeShape{3, 3, 10},
                                                            AcceptanceParams{}, nullptr, adt));
      decoders.emplace_back(
          "adt_tree-coolsd",
          std::make_unique<Eagle2Decoder>("adt_tree", target, eagle, p, TreeShape{3, 3, 10}, cool, nullptr, adt));
      decoders.emplace_back("zipar", std::make_unique<ZipArDecoder>(target, p, 3));
      decoders.emplace_back("mulo_sd", std::make_unique<MuloSdDecoder>(tiny_mulo.decoder(p, mulo)));
      for (auto& [name, decoder] : decoders) {
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
