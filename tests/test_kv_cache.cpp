// The KV cache and cached forwards against recomputation from scratch (fp32, max |diff| <= 1e-5).
#include <gtest/gtest.h>

#include "core/op_counter.h"
#include "models/gpt/gpt.h"
#include "tiny_models.h"

namespace vispec {

namespace {
constexpr double kTol = 1e-5;

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

torch::Tensor positions(int64_t B, std::vector<int64_t> p) {
  return torch::tensor(p, torch::kInt64).unsqueeze(0).expand({B, int64_t(p.size())}).contiguous();
}

struct Fixture {
  Gpt gpt = test::tiny_gpt();
  torch::Tensor classes = torch::tensor({0, 2}, torch::kInt64);
  torch::Tensor tokens = torch::randint(64, {2, 15}, torch::kInt64);  // 15 of the 16 image tokens
  torch::NoGradGuard no_grad;
  // Logits of a full, uncached forward: output j predicts image token j.
  torch::Tensor full(const torch::Tensor& toks, const torch::Tensor& cls) {
    return gpt->forward_sequence(gpt->embed_classes(cls), toks).logits;
  }
};
}  // namespace

TEST(KvCache, IncrementalDecodingEqualsFullForward) {
  Fixture f;
  auto ref = f.full(f.tokens, f.classes);  // [2, 16, V]
  auto cache = f.gpt->make_cache(2);
  auto out = f.gpt->prefill(cache, f.gpt->embed_classes(f.classes));
  cache.advance();
  double worst = max_diff(out.logits.select(1, 0), ref.select(1, 0));
  for (int64_t i = 0; i < 15; ++i) {
    out = f.gpt->decode_block(cache, f.tokens.narrow(1, i, 1), positions(2, {i}), torch::ones({1, 1}, torch::kBool));
    cache.advance();
    worst = std::max(worst, max_diff(out.logits.select(1, 0), ref.select(1, i + 1)));
  }
  std::printf("incremental vs full: max |diff| = %.3g\n", worst);
  EXPECT_LE(worst, kTol);
}

TEST(KvCache, CausalBlockEqualsFullForward) {
  Fixture f;
  auto ref = f.full(f.tokens, f.classes);
  auto cache = f.gpt->make_cache(2);
  f.gpt->prefill(cache, f.gpt->embed_classes(f.classes));
  cache.advance();
  auto out = f.gpt->decode_block(cache, f.tokens.narrow(1, 0, 6), positions(2, {0, 1, 2, 3, 4, 5}), causal_mask(6));
  const double d = max_diff(out.logits, ref.narrow(1, 1, 6));
  std::printf("causal block vs full: max |diff| = %.3g\n", d);
  EXPECT_LE(d, kTol);
}

TEST(KvCache, TruncateEqualsRecomputation) {
  Fixture f;
  auto ref = f.full(f.tokens, f.classes);
  auto cache = f.gpt->make_cache(2);
  f.gpt->prefill(cache, f.gpt->embed_classes(f.classes));
  cache.advance();
  // Commit 3 right tokens, then 5 wrong ones; truncate back to condition + 3 and continue with the right ones.
  f.gpt->decode_block(cache, f.tokens.narrow(1, 0, 3), positions(2, {0, 1, 2}), causal_mask(3));
  cache.advance();
  auto wrong = (f.tokens.narrow(1, 3, 5) + 1) % 64;
  f.gpt->decode_block(cache, wrong, positions(2, {3, 4, 5, 6, 7}), causal_mask(5));
  cache.advance();
  cache.advance(std::vector<int64_t>{-5, -5});
  auto out = f.gpt->decode_block(cache, f.tokens.narrow(1, 3, 4), positions(2, {3, 4, 5, 6}), causal_mask(4));
  const double d = max_diff(out.logits, ref.narrow(1, 4, 4));
  std::printf("after truncate vs full: max |diff| = %.3g\n", d);
  EXPECT_LE(d, kTol);
}

// A draft tree after the committed prefix:      node0 -> node1
//                                                     -> node2 -> node3
// Under the ancestor mask, each node's logits equal those of its branch forwarded alone; keeping the path
// (0, 2, 3) leaves the cache as if that path had been decoded token by token; rows may keep different paths.
TEST(KvCache, TreeMaskEqualsSeparateBranchesAndKeepCompactsThePath) {
  Fixture f;
  const int64_t P = 5;  // committed image tokens before the tree
  auto prefix = f.tokens.narrow(1, 0, P);
  auto tree = torch::randint(64, {2, 4}, torch::kInt64);
  auto mask = torch::tensor({1, 0, 0, 0,  //
                             1, 1, 0, 0,  //
                             1, 0, 1, 0,  //
                             1, 0, 1, 1},
                            torch::kBool)
                  .view({4, 4});
  auto cache = f.gpt->make_cache(2);
  f.gpt->prefill(cache, f.gpt->embed_classes(f.classes));
  cache.advance();
  f.gpt->decode_block(cache, prefix, positions(2, {0, 1, 2, 3, 4}), causal_mask(P));
  cache.advance();
  auto out = f.gpt->decode_block(cache, tree, positions(2, {P, P + 1, P + 1, P + 2}), mask);

  auto idx = [](std::vector<int64_t> v) { return torch::tensor(v, torch::kInt64); };
  auto branch_a = torch::cat({prefix, tree.index_select(1, idx({0, 1}))}, 1);
  auto branch_b = torch::cat({prefix, tree.index_select(1, idx({0, 2, 3}))}, 1);
  auto ref_a = f.full(branch_a, f.classes), ref_b = f.full(branch_b, f.classes);
  double d = max_diff(out.logits.select(1, 0), ref_a.select(1, P + 1));
  d = std::max(d, max_diff(out.logits.select(1, 1), ref_a.select(1, P + 2)));
  d = std::max(d, max_diff(out.logits.select(1, 2), ref_b.select(1, P + 2)));
  d = std::max(d, max_diff(out.logits.select(1, 3), ref_b.select(1, P + 3)));
  std::printf("tree mask vs separate branches: max |diff| = %.3g\n", d);
  EXPECT_LE(d, kTol);

  // Row 0 keeps path (0, 2, 3), row 1 keeps (0, 1), both at once: lengths now differ (the ragged path of the
  // cache).
  cache.keep_paths({{0, 2, 3}, {0, 1}});
  EXPECT_EQ(cache.length(0), 1 + P + 3);
  EXPECT_EQ(cache.length(1), 1 + P + 2);
  auto next = torch::randint(64, {2, 2}, torch::kInt64);
  auto pos = torch::tensor({P + 3, P + 4, P + 2, P + 3}, torch::kInt64).view({2, 2});
  auto out2 = f.gpt->decode_block(cache, next, pos, causal_mask(2));
  auto seq0 = torch::cat({branch_b[0].unsqueeze(0), next[0].unsqueeze(0)}, 1);
  auto seq1 = torch::cat({branch_a[1].unsqueeze(0), next[1].unsqueeze(0)}, 1);
  auto r0 = f.full(seq0, f.classes.narrow(0, 0, 1)), r1 = f.full(seq1, f.classes.narrow(0, 1, 1));
  double d2 = max_diff(out2.logits[0], r0[0].narrow(0, P + 4, 2));
  d2 = std::max(d2, max_diff(out2.logits[1], r1[0].narrow(0, P + 3, 2)));
  std::printf("after keep(path), ragged rows vs recomputation: max |diff| = %.3g\n", d2);
  EXPECT_LE(d2, kTol);
}

// A tree grown level by level (a mask wider than the block: each forward runs only the new nodes, attending to the
// block's earlier entries) gives the logits and, after keep(), the cache of the same tree forwarded as one block; with
// equal and with ragged row lengths.
TEST(KvCache, ExtendedBlockEqualsOneBlock) {
  Fixture f;
  auto tree = torch::randint(64, {2, 4}, torch::kInt64);
  auto mask = torch::tensor({1, 0, 0, 0,  //
                             1, 1, 0, 0,  //
                             1, 0, 1, 0,  //
                             1, 0, 1, 1},
                            torch::kBool)
                  .view({4, 4});
  for (bool ragged : {false, true}) {
    std::vector<KvCache> caches;
    for (int i = 0; i < 2; ++i) {
      caches.push_back(f.gpt->make_cache(2, 4));
      f.gpt->prefill(caches.back(), f.gpt->embed_classes(f.classes));
      caches.back().advance();
      f.gpt->decode_block(caches.back(), f.tokens.narrow(1, 0, 5), positions(2, {0, 1, 2, 3, 4}), causal_mask(5));
      caches.back().advance();
      if (ragged) caches.back().advance(std::vector<int64_t>{0, 1 + 3 - caches.back().length(1)});
    }
    // Row 1 continues at position 3 when ragged.
    const int64_t s1 = ragged ? 3 : 5;
    auto pos = torch::tensor(std::vector<int64_t>{5, 6, 6, 7, s1, s1 + 1, s1 + 1, s1 + 2}).view({2, 4});
    auto one = f.gpt->decode_block(caches[0], tree, pos, mask);
    auto a =
        f.gpt->decode_block(caches[1], tree.narrow(1, 0, 1), pos.narrow(1, 0, 1), mask.narrow(0, 0, 1).narrow(1, 0, 1));
    auto b = f.gpt->decode_block(caches[1], tree.narrow(1, 1, 3), pos.narrow(1, 1, 3), mask.narrow(0, 1, 3));
    EXPECT_EQ(caches[1].pending(), 4);
    double d = max_diff(one.logits, torch::cat({a.logits, b.logits}, 1));
    for (auto& c : caches) {
      c.keep_paths({{0, 2, 3}, {0, 1}});
    }
    auto next = torch::randint(64, {2, 1}, torch::kInt64);
    auto npos = torch::tensor(std::vector<int64_t>{8, s1 + 2}).view({2, 1});
    auto n0 = f.gpt->decode_block(caches[0], next, npos, causal_mask(1));
    auto n1 = f.gpt->decode_block(caches[1], next, npos, causal_mask(1));
    d = std::max(d, max_diff(n0.logits, n1.logits));
    std::printf("extended vs one block (%s rows): max |diff| = %.3g\n", ragged ? "ragged" : "equal", d);
    EXPECT_LE(d, kTol);
  }
}

// A commit moves the kept entries of every layer's keys and values at once (one storage for them all): what it
// writes equals each layer's entries moved on their own, on the host's path and on the static (device) path, and
// the operators it issues are the same for 1 layer and for 6, so a 48-layer model's commit is no longer 192
// gathers and scatters.
TEST(KvCache, KeepPathsMovesEveryLayerInOneGatherAndOneScatter) {
  torch::manual_seed(5);
  const int64_t B = 2, H = 2, S = 16, D = 4, pending = 5;
  const std::vector<std::vector<int64_t>> rows{{0, 2, 3}, {1}};
  const auto on_device = torch::tensor({0, 2, 3, 1, -1, -1}, torch::kInt64).view({B, 3});
  for (bool device : {false, true}) {
    std::vector<int64_t> ops;
    for (int64_t layers : {1, 6}) {
      KvCache cache(layers, B, H, S, D, torch::kFloat32, torch::kCPU, KvLengths{device});
      cache.begin_block(4, torch::Tensor());
      cache.advance(std::vector<int64_t>{4, 2});  // rows of different committed lengths
      std::vector<torch::Tensor> before;
      for (int64_t l = 0; l < layers; ++l)
        for (const auto& t : {cache.keys(l), cache.values(l)}) before.push_back(t.copy_(torch::randn_like(t)).clone());
      cache.begin_block(pending, torch::Tensor());
      OpCounter counter;
      if (device) cache.keep_paths(on_device);
      else cache.keep_paths(rows);
      ops.push_back(counter.ops());
      // The device path's host plan is an upper bound until settled: its lengths are the device's.
      const auto lengths = device ? cache.lengths_on_device() : torch::tensor(cache.lengths(), torch::kInt64);
      EXPECT_TRUE(torch::equal(lengths, torch::tensor({7, 3}, torch::kInt64))) << lengths;
      for (int64_t l = 0; l < layers; ++l)
        for (int64_t kv = 0; kv < 2; ++kv) {
          auto want = before[size_t(2 * l + kv)].clone();
          const std::vector<int64_t> length{4, 2};
          for (int64_t b = 0; b < B; ++b)
            for (size_t j = 0; j < rows[size_t(b)].size(); ++j)
              want[b]
                  .narrow(1, length[size_t(b)] + int64_t(j), 1)
                  .copy_(before[size_t(2 * l + kv)][b].narrow(1, length[size_t(b)] + rows[size_t(b)][j], 1));
          const auto& got = kv == 0 ? cache.keys(l) : cache.values(l);
          EXPECT_TRUE(torch::equal(got, want))
              << "layer " << l << (kv ? " values" : " keys") << (device ? ", device" : "");
        }
    }
    EXPECT_EQ(ops[0], ops[1]) << (device ? "device" : "host") << " path: the commit's operators grow with the layers";
    std::printf("keep_paths (%s path): %lld operators for 1 layer and for 6\n", device ? "device" : "host",
                static_cast<long long>(ops[1]));
  }
}

TEST(Gpt, ParameterNamesFollowLlamaGen) {
  auto gpt = test::tiny_gpt();
  std::set<std::string> names;
  for (const auto& p : gpt->named_parameters()) names.insert(p.key());
  for (const char* n :
       {"tok_embeddings.weight", "cls_embedding.embedding_table.weight", "layers.0.attention.wqkv.weight",
        "layers.1.attention.wo.weight", "layers.0.feed_forward.w1.weight", "layers.0.feed_forward.w2.weight",
        "layers.0.feed_forward.w3.weight", "layers.0.attention_norm.weight", "layers.0.ffn_norm.weight", "norm.weight",
        "output.weight"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(gpt->cls_embedding->embedding_table->weight.size(0), 4);  // 3 classes + the null class
}

TEST(Gpt, FfnHiddenFollowsLlamaGenRounding) {
  // LlamaGen GPT-B (dim 768): find_multiple(int(2 * 4 * 768 / 3), 256) = 2048; GPT-XL (1280): 3584.
  GptConfig b = gpt_preset("GPT-B"), xl = gpt_preset("GPT-XL"), b3 = gpt_preset("GPT-3B");
  EXPECT_EQ(b.ffn_hidden(), 2048);
  EXPECT_EQ(xl.ffn_hidden(), 3584);
  EXPECT_EQ(b3.ffn_hidden(), 8704);
  EXPECT_EQ(b3.head_dim(), 100);
}

}  // namespace vispec
