// The verification unit's tree walk as one operator (kernels/tree_walk.h): its CPU reference
// walks as the composite tensor walk (decoding/common/verify.h's verify_tree and verify_tree_greedy) does, for
// every acceptance rule, with and without EAGLE-1's drafter q, greedy and sampling; its CUDA kernel computes
// the CPU reference's bits. The decoders' own tests (greedy equality with AR, chi-square against the exact
// distribution) run through it wherever the fused operators run.
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/device.h"
#include "decoding/common/acceptance.h"
#include "decoding/common/draft_tree.h"
#include "decoding/common/verify.h"
#include "kernels/tree_walk.h"
#include "kernels/kernel_check.h"

namespace vispec {

namespace {

// Random walks' inputs: B trees of up to T nodes with up to C children per node, distributions over V codes.
struct WalkCase {
  std::vector<DraftTree> trees;
  TreeTables tables;
  int64_t levels = 0;
  torch::Tensor p, target, node_q, q_slot, limit, neighbours;
  TreeUniforms u;
  std::vector<int64_t> lengths;
};

WalkCase random_case(int64_t B, int64_t T, int64_t C, int64_t V, uint64_t seed) {
  std::mt19937_64 gen(seed);
  torch::manual_seed(int64_t(seed));
  WalkCase w;
  for (int64_t b = 0; b < B; ++b) {
    DraftTree t;
    t.token = {0}, t.parent = {-1}, t.depth = {0}, t.score = {0};
    std::vector<int64_t> kids(size_t(T), 0);
    const int64_t nodes = 1 + int64_t(gen() % uint64_t(T));
    for (int64_t i = 1; i < nodes; ++i) {
      // (a recent node mostly: deep trees)
      auto pick = [&] {
        return gen() % 4 ? i - 1 - int64_t(gen() % uint64_t(std::min<int64_t>(i, 3))) : int64_t(gen() % uint64_t(i));
      };
      int64_t parent = pick();
      while (kids[size_t(parent)] >= C) parent = int64_t(gen() % uint64_t(i));
      ++kids[size_t(parent)];
      int64_t token = int64_t(gen() % uint64_t(V));  // siblings are distinct tokens, as drafters make them
      for (bool clash = true; clash;) {
        clash = false;
        for (int64_t j = 1; j < i; ++j)
          if (t.parent[size_t(j)] == parent && t.token[size_t(j)] == token) clash = true, token = (token + 1) % V;
      }
      t.token.push_back(token), t.parent.push_back(parent), t.depth.push_back(t.depth[size_t(parent)] + 1);
      t.score.push_back(0);
    }
    w.levels = std::max(w.levels, *std::max_element(t.depth.begin(), t.depth.end()));
    w.trees.push_back(t);
    w.lengths.push_back(2 + int64_t(gen() % 4));
  }
  w.tables = tree_tables(w.trees, T, torch::kCPU, C);
  // Peaked distributions that make the drafted tokens likely, so that walks go deep and reject often too.
  auto logits = torch::randn({B, T, V});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 1; i < w.trees[size_t(b)].size(); ++i)
      logits[b][w.trees[size_t(b)].parent[size_t(i)]][w.trees[size_t(b)].token[size_t(i)]] += 5.0;
  w.p = torch::softmax(logits, -1);
  w.target = w.p.argmax(-1);
  // The greedy walks accept where a child is the argmax: make it so along a random path.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 1; i < w.trees[size_t(b)].size(); ++i)
      if (gen() % 2) w.target[b][w.trees[size_t(b)].parent[size_t(i)]] = w.trees[size_t(b)].token[size_t(i)];
  w.node_q = torch::softmax(torch::randn({B, T, V}) + logits * 0.5, -1);
  w.q_slot = torch::arange(T, torch::kInt64).repeat({B, 1});
  w.limit = torch::randint(0, w.levels + 2, {B}, torch::kInt64).clamp_min(1);  // (row 0: an image already full)
  w.limit[0] = 0;
  std::vector<torch::Tensor> near;  // a neighbour table: 40 distinct codes per code
  for (int64_t x = 0; x < V; ++x) near.push_back(torch::randperm(V, torch::kInt64).narrow(0, 0, 40));
  w.neighbours = torch::stack(near);
  const int64_t L = w.levels;
  w.u.levels = L;
  w.u.accept = torch::rand({B, L, C}, torch::kFloat64);
  w.u.resample = torch::rand({B, L + 1}, torch::kFloat64);
  w.u.sample = torch::rand({B, L + 1}, torch::kFloat64);
  return w;
}

struct RuleCase {
  std::string name;
  AcceptanceParams params;
};

std::vector<RuleCase> every_rule() {
  std::vector<RuleCase> rules;
  AcceptanceParams a;
  rules.push_back({"exact", a});
  a.rule = AcceptRule::kLantern, a.k = 40, a.delta = 0.2;
  rules.push_back({"lantern", a});
  a.optimal_resampling = true;
  rules.push_back({"lantern optimal", a});
  a = AcceptanceParams{};
  a.rule = AcceptRule::kLanternPlusPlus, a.k = 40, a.lambda = 2;
  rules.push_back({"lanternpp", a});
  a.optimal_resampling = true;
  rules.push_back({"lanternpp optimal", a});
  for (auto schedule : {CoolSchedule::kExponential, CoolSchedule::kLinear}) {
    a = AcceptanceParams{};
    a.rule = AcceptRule::kCoolSd, a.schedule = schedule, a.budget = 0.9;
    rules.push_back({schedule == CoolSchedule::kLinear ? "coolsd linear" : "coolsd", a});
  }
  return rules;
}

std::optional<torch::Tensor> opt(const torch::Tensor& t, torch::Device d) {
  return t.defined() ? std::optional<torch::Tensor>(t.to(d)) : std::nullopt;
}

// The operator on `device` for the case's trees (sampling: p given; greedy: target).
TreeVerdict fused(const WalkCase& w, const RuleCase& r, bool greedy, bool with_q, torch::Device d) {
  const auto& a = r.params;
  torch::Tensor weights;
  if (a.rule == AcceptRule::kCoolSd) {
    std::vector<double> table;
    for (int64_t length : w.lengths) {
      const auto cw = cool_weights(a, length);
      for (int64_t j = 0; j < std::max<int64_t>(w.levels, 1); ++j)
        table.push_back(cw[size_t(std::min<int64_t>(j, length - 1))]);
    }
    weights = torch::tensor(table, torch::kFloat64).view({int64_t(w.lengths.size()), -1});
  }
  const bool nn = a.needs_neighbours() && !greedy;
  auto [path, accepted, next, sampled, tried] = kernels::tree_walk(
      greedy ? std::nullopt : opt(w.p, d), greedy ? opt(w.target, d) : std::nullopt, w.tables.token.to(d),
      w.tables.depth.to(d), w.tables.children.to(d), with_q && !greedy ? opt(w.node_q, d) : std::nullopt,
      with_q && !greedy ? opt(w.q_slot, d) : std::nullopt, nn ? opt(w.neighbours, d) : std::nullopt, opt(weights, d),
      w.limit.to(d), opt(w.u.accept, d), opt(w.u.resample, d), opt(w.u.sample, d), w.levels, int64_t(a.rule),
      nn ? a.k : 0, a.delta, a.lambda, a.optimal_resampling);
  return {path.cpu(), accepted.cpu(), next.cpu(), sampled.cpu(), tried.cpu()};
}

// Where two verdicts differ: "" if nowhere. `next` counts only where a token was sampled.
std::string differs(const TreeVerdict& a, const TreeVerdict& b) {
  if (!torch::equal(a.path, b.path)) return "path";
  if (!torch::equal(a.accepted, b.accepted)) return "accepted";
  if (!torch::equal(a.sampled, b.sampled)) return "sampled";
  if (!torch::equal(a.next.masked_fill(a.sampled.logical_not(), 0), b.next.masked_fill(b.sampled.logical_not(), 0)))
    return "next";
  if (!torch::equal(a.tried, b.tried)) return "tried";
  return "";
}

}  // namespace

TEST(TreeWalk, TheOperatorWalksAsTheCompositeWalkForEveryRule) {
  int64_t walks = 0, deep = 0, rejected = 0;
  for (uint64_t seed : {1, 2, 3}) {
    const auto w = random_case(12, 14, 4, 300, seed);
    for (const auto& r : every_rule()) {
      const ChainRule rule{r.params, w.neighbours, 4};
      for (bool greedy : {false, true})
        for (bool with_q : {false, true}) {
          if (greedy && with_q) continue;
          const auto composite = greedy ? verify_tree_greedy(rule, w.target, w.tables, w.lengths, w.limit, w.u)
                                        : verify_tree(rule, w.p, w.tables, with_q ? w.node_q : torch::Tensor(),
                                                      with_q ? w.q_slot : torch::Tensor(), w.lengths, w.limit, w.u);
          const auto op = fused(w, r, greedy, with_q, torch::kCPU);
          EXPECT_EQ(differs(op, composite), "")
              << r.name << (greedy ? " greedy" : " sampling") << (with_q ? " with q" : "") << ", seed " << seed;
          walks += w.limit.size(0);
          deep += op.accepted.ge(2).sum().item<int64_t>();
          rejected += (op.tried - op.accepted).gt(0).sum().item<int64_t>();
        }
    }
  }
  // The cases exercise what they claim: walks that go deep and walks that reject.
  std::cout << walks << " walks: " << deep << " accepted two drafts or more, " << rejected << " rejected a child\n";
  EXPECT_GT(deep, walks / 10) << walks << " walks";
  EXPECT_GT(rejected, walks / 5) << walks << " walks";
}

// The chain rule (SD, SJD, SSD's first row) runs as the same walk over a tree of one child per node.
TEST(TreeWalk, ChainsWalkAsTheCompositeChainRule) {
  const int64_t B = 16, G = 5, V = 200;
  int64_t rows = 0, accepted_some = 0, rejected_some = 0;
  for (int64_t seed : {11, 12, 13}) {
    torch::manual_seed(seed);
    const auto q = torch::softmax(torch::randn({B, G, V}) * 2, -1);
    const auto drafts = torch::multinomial(q.reshape({B * G, V}), 1).view({B, G});
    // The target mostly agrees with the drafts, so that chains run long and reject too.
    auto logits = torch::randn({B, G + 1, V});
    logits.narrow(1, 0, G).scatter_add_(2, drafts.unsqueeze(2), torch::full({B, G, 1}, 3.0));
    const auto p = torch::softmax(logits, -1);
    auto target = p.argmax(-1);
    target.narrow(1, 0, G).copy_(torch::where(torch::rand({B, G}) < 0.7, drafts, target.narrow(1, 0, G)));
    const auto count = torch::randint(0, G + 1, {B}, torch::kInt64).clamp_min(G - 1);
    ChainUniforms u{torch::rand({B, G}, torch::kFloat64), torch::rand({B, G + 1}, torch::kFloat64),
                    torch::rand({B, G + 1}, torch::kFloat64)};
    const auto neighbours = torch::stack([&] {
      std::vector<torch::Tensor> near;
      for (int64_t x = 0; x < V; ++x) near.push_back(torch::randperm(V, torch::kInt64).narrow(0, 0, 40));
      return near;
    }());
    for (const auto& r : every_rule()) {
      const ChainRule rule{r.params, neighbours, G};
      for (bool greedy : {false, true}) {
        ChainVerdict composite;
        {
          const kernels::CompositeOnly reference;
          composite =
              greedy ? verify_chain_greedy(rule, target, drafts, count, u) : verify_chain(rule, p, q, drafts, count, u);
        }
        const auto fused =
            greedy ? verify_chain_greedy(rule, target, drafts, count, u) : verify_chain(rule, p, q, drafts, count, u);
        EXPECT_TRUE(torch::equal(fused.accepted, composite.accepted)) << r.name << (greedy ? " greedy" : "");
        EXPECT_TRUE(torch::equal(fused.next, composite.next)) << r.name << (greedy ? " greedy" : "");
        rows += B;
        accepted_some += fused.accepted.gt(1).sum().item<int64_t>();
        rejected_some += fused.accepted.lt(count).sum().item<int64_t>();
      }
    }
  }
  std::cout << rows << " chains: " << accepted_some << " accepted two drafts or more, " << rejected_some
            << " rejected one\n";
  EXPECT_GT(accepted_some, rows / 10);
  EXPECT_GT(rejected_some, rows / 5);
}

TEST(TreeWalk, RefusesInputsOfTheWrongShape) {
  const auto w = random_case(2, 6, 2, 50, 4);
  const auto r = every_rule().front();
  EXPECT_NO_THROW(fused(w, r, false, false, torch::kCPU));
  auto bad = w;
  bad.limit = torch::zeros({3}, torch::kInt64);
  EXPECT_THROW(fused(bad, r, false, false, torch::kCPU), std::exception);
  bad = w;
  bad.u.resample = torch::rand({2, w.levels}, torch::kFloat64);  // one level short
  EXPECT_THROW(fused(bad, r, false, false, torch::kCPU), std::exception);
  const auto lantern = every_rule()[1];
  bad = w;
  bad.neighbours = w.neighbours.narrow(1, 0, 10);  // fewer columns than k
  EXPECT_THROW(fused(bad, lantern, false, false, torch::kCPU), std::exception);
}

TEST(TreeWalk, OnCudaEqualsTheCpuReferenceBitForBit) {
  if (!cuda_usable()) GTEST_SKIP() << "no CUDA device here: the CUDA case is skipped (scripts/gpu_check.sh runs it)";
  for (const int64_t V : {300, 16384}) {
    const auto w = random_case(6, 20, 5, V, 7 + uint64_t(V));
    for (const auto& r : every_rule())
      for (bool greedy : {false, true})
        for (bool with_q : {false, true}) {
          if (greedy && with_q) continue;
          const auto gpu = fused(w, r, greedy, with_q, torch::Device(torch::kCUDA, 0));
          const auto cpu = fused(w, r, greedy, with_q, torch::kCPU);
          EXPECT_EQ(differs(gpu, cpu), "")
              << r.name << (greedy ? " greedy" : " sampling") << (with_q ? " with q" : "") << ", V " << V;
        }
  }
}

}  // namespace vispec
