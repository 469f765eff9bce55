// EAGLE-1 (Li et al. 2024, branch v1) as LANTERN++ and Cool-SD run it (docs/algorithms.md
// "EAGLE-1 static trees, LANTERN++ and Cool-SD"):
//
//   catch up  the drafter reads the new (feature, token) pairs, as in EAGLE-2 (decoding/common/eagle_drafter_state)
//   draft     level by level down a STATIC tree of child ranks (decoding/common/static_tree; naive_extend_57): at every
//             node with children, the drafter's processed distribution q; its n children are n draws from q
//             WITHOUT replacement, rank = draw order. Each level's nodes run as one block extending the last.
//   verify    ONE target forward over [root, tree nodes] under the tree's ancestor mask
//   walk      from the root, the children in rank order: child x is accepted with rule(p, q^, x, depth), where
//             q^ is the parent's q without the earlier siblings, renormalised (the sibling-adjusted drafter
//             probability; q^(x) is x's conditional draw probability); on rejection p becomes the rule's
//             rejection distribution against q^ (exact: norm(max(0, p - q^))) and the next child is tried;
//             when every child is rejected, or at a leaf, the next token is sampled from p (decoding/common/verify's
//             tree walk: every row at once, one read of the paths per iteration)
//   keep      the root and accepted nodes' entries in the target cache; the sampled token is the new root
// Everything up to the walk's one read touches only the device (IterationLoop::device_half), so on a GPU a steady
// iteration is replayed as one CUDA graph (decoding/common/iteration_graphs.h); the static tree's tables are
// made once per batch size (tables()), where a replay finds them.
// With the exact rule this is recursive rejection sampling without replacement: given the first rejection,
// the next child is a draw from q^ and the residual does not depend on which token was rejected, so by
// induction the committed token has the target distribution. At T = 0 the drafts are the drafter's top-n
// (of its raw guided distribution) and q^ is one-hot at the draft: AR's greedy tokens.
// Randomness per (seed, sample id, position): kDraft (draw = node * 64 + rank) for the drafts, kAccept (draw =
// rank) for the tests, kSample/kResample for the next token.
#include "decoding/eagle1.h"

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/draft_tree.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/eagle_drafter_state.h"
#include "decoding/common/iteration_loop.h"
#include "decoding/common/verify.h"

namespace vispec {

Eagle1Decoder::Eagle1Decoder(std::string name, Gpt target, EagleDrafter drafter, SamplingParams params, StaticTree tree,
                             AcceptanceParams accept, std::shared_ptr<const CodebookNeighbours> neighbours)
    : name_(std::move(name)), target_(std::move(target), params.cfg_scale), drafter_(std::move(drafter)),
      params_(params), tree_(std::move(tree)), rule_(chain_rule(accept, neighbours.get(), 1, target_.gpt()->device())) {
  VISPEC_ASSERT(tree_.size() > 1, "a static tree needs at least one draft");
}

// Per depth d, constant over iterations: where the draws of the depth's expanded nodes go (children: the child
// nodes, drawn_at: each one's entry m * n + rank in that level's [M, n] draws), and the next depth's drafter
// block: its nodes, their parents' entries and their ancestry within the block.
struct Eagle1Level {
  int64_t draws = 0;                            // n: draws per expanded node
  torch::Tensor children, drawn_at;             // [c] each
  int64_t draw_offset = 0;                      // where this depth's draws start in the iteration's uniforms
  torch::Tensor next_nodes, parent_slot, mask;  // [K], [K], [K, W]
  int64_t first_entry = 0;                      // the next block's first entry in the drafter's pending block
};

struct Eagle1Decoder::Tables {
  std::vector<std::vector<int64_t>> expanded;  // per depth, the nodes with children (the drafter runs those)
  int64_t block_entries = 0;                   // drafter block entries of the nodes below depth 0
  int64_t draft_forwards = 1;                  // the catch-up and one per depth whose nodes are drafted
  std::vector<int64_t> drafter_widths;         // the pending block's width after each of those depths' forwards
  int64_t C = 1;                               // child slots: the largest rank + 1
  torch::Tensor static_kids;                   // [1, T * C]: each node's child at each rank, -1 where none
  torch::Tensor q_slot;                        // [1, T]: each expanded node's slot in the drafter's q, -1 for leaves
  torch::Tensor node_depth;                    // [1, T]
  torch::Tensor tree_mask;                     // [B, T, T]: every node attends itself and its ancestors
  std::vector<Eagle1Level> levels;
  torch::Tensor draw_depths, draw_indices;  // [1, draws], [B, draws]: each draw's depth and random-stream index
};

const Eagle1Decoder::Tables& Eagle1Decoder::tables(int64_t B, torch::Device device) {
  auto& made = tables_[{B, device.str()}];
  if (made) return *made;
  auto t = std::make_shared<Tables>();
  const int64_t T = tree_.size(), L = tree_.max_depth();
  // The tree's nodes with children, by depth, and each one's entry in the drafter's block (the root's output
  // is the catch-up's, entry -1). The drafter only runs nodes with children.
  auto& expanded = t->expanded;
  expanded.resize(size_t(L));
  std::vector<int64_t> entry(static_cast<size_t>(T), -1);
  for (int64_t d = 0; d < L; ++d)
    for (int64_t i = 0; i < T; ++i)
      if (tree_.depth[size_t(i)] == d && tree_.draws[size_t(i)] > 0) {
        expanded[size_t(d)].push_back(i);
        if (d > 0) entry[size_t(i)] = t->block_entries++;
      }
  std::vector<std::vector<int64_t>> children(static_cast<size_t>(T));  // rank order
  for (int64_t i = 1; i < T; ++i) children[size_t(tree_.parent[size_t(i)])].push_back(i);
  for (auto& c : children)
    std::sort(c.begin(), c.end(), [&](int64_t a, int64_t b) { return tree_.rank[size_t(a)] < tree_.rank[size_t(b)]; });
  for (int64_t i = 1; i < T; ++i) t->C = std::max(t->C, tree_.rank[size_t(i)] + 1);
  auto static_kids = torch::full({T, t->C}, -1, torch::kInt64);
  for (int64_t i = 1; i < T; ++i) static_kids[tree_.parent[size_t(i)]][tree_.rank[size_t(i)]] = i;
  t->static_kids = static_kids.to(device).view({1, T * t->C});
  // Each expanded node's slot in the drafter's q of all levels (level_q concatenated).
  auto q_slot = torch::full({1, T}, -1, torch::kInt64);
  for (int64_t d = 0, offset = 0; d < L; offset += int64_t(expanded[size_t(d)].size()), ++d)
    for (size_t m = 0; m < expanded[size_t(d)].size(); ++m) q_slot[0][expanded[size_t(d)][m]] = offset + int64_t(m);
  t->q_slot = q_slot.to(device);
  t->node_depth = torch::tensor(tree_.depth, torch::kInt64).to(device).view({1, T});
  DraftTree shape;
  shape.parent = tree_.parent;
  shape.token.assign(size_t(T), 0);
  t->tree_mask = tree_masks(std::vector<DraftTree>(size_t(B), shape), T).to(device);
  t->levels.resize(size_t(L));
  // Every draw of an iteration, depth by depth: its position past the root and its random-stream index (node *
  // 64 + j), so that one call draws the iteration's uniforms.
  std::vector<int64_t> draw_depth, draw_index;
  for (int64_t d = 0; d < L; ++d) {
    const auto& nodes = expanded[size_t(d)];
    auto& lv = t->levels[size_t(d)];
    for (int64_t i : nodes) lv.draws = std::max(lv.draws, tree_.draws[size_t(i)]);
    std::vector<int64_t> kids, at;
    for (size_t m = 0; m < nodes.size(); ++m)
      for (int64_t child : children[size_t(nodes[m])]) {
        kids.push_back(child);
        at.push_back(int64_t(m) * lv.draws + tree_.rank[size_t(child)]);
      }
    lv.children = torch::tensor(kids, torch::kInt64).to(device);
    lv.drawn_at = torch::tensor(at, torch::kInt64).to(device);
    lv.draw_offset = int64_t(draw_index.size());
    for (int64_t i : nodes)
      for (int64_t j = 0; j < lv.draws; ++j) {
        draw_depth.push_back(d + 1);
        draw_index.push_back(i * 64 + j);
      }
    if (d + 1 >= L || expanded[size_t(d + 1)].empty()) continue;
    const auto& next = expanded[size_t(d + 1)];
    const int64_t K = int64_t(next.size()), W = entry[size_t(next[0])] + K;
    auto parent_slot = torch::zeros({K}, torch::kInt64);
    auto mask = torch::zeros({K, W}, torch::kBool);
    auto ps = parent_slot.accessor<int64_t, 1>();
    auto ma = mask.accessor<bool, 2>();
    for (int64_t k = 0; k < K; ++k) {
      const int64_t node = next[size_t(k)];
      ps[k] = entry[size_t(tree_.parent[size_t(node)])] + 1;
      for (int64_t a = node; a > 0; a = tree_.parent[size_t(a)]) ma[k][entry[size_t(a)]] = true;
    }
    lv.next_nodes = torch::tensor(next, torch::kInt64).to(device);
    lv.parent_slot = parent_slot.to(device);
    lv.mask = mask.to(device);
    lv.first_entry = entry[size_t(next[0])];
  }
  for (int64_t d = 0; d < L && !expanded[size_t(d)].empty() && t->levels[size_t(d)].next_nodes.defined(); ++d) {
    const auto& lv = t->levels[size_t(d)];
    t->drafter_widths.push_back(lv.first_entry + lv.next_nodes.size(0));
    ++t->draft_forwards;
  }
  const int64_t draws = int64_t(draw_index.size());
  t->draw_depths = torch::tensor(draw_depth, torch::kInt64).to(device).view({1, draws});
  t->draw_indices = torch::tensor(draw_index, torch::kInt64).to(device).view({1, draws}).expand({B, draws});
  made = std::move(t);
  return *made;
}

torch::Tensor Eagle1Decoder::draft_probs(const torch::Tensor& features) const {
  Gpt gpt = target_.gpt();  // a holder (image_logits is not const)
  auto logits = gpt->image_logits(features).to(torch::kFloat32);
  if (target_.guided()) logits = cfg_combine(logits, params_.cfg_scale);
  if (!params_.greedy()) return target_probs(logits, params_);
  nonfinite_watch::note(logits, nonfinite_watch::Source::kLogits);  // (target_probs notes its own)
  return torch::softmax(logits, -1);
}

// Every row's node tokens and conditional draw probabilities, on the device: the next depth's inputs, the
// verification forward's and the walk's are gathered there, and only the walk's verdict is read.
struct Eagle1Decoder::DraftedTree {
  torch::Tensor tokens;          // [B, T]: the root (the newest token), then the drafts
  torch::Tensor probs;           // [B, T] float64: each draft's conditional draw probability (0: none drawn)
  std::vector<torch::Tensor> q;  // per depth d, q at expanded[d]'s nodes [B, n_d, V]
  torch::Tensor root_cells;      // [B, 1]: the root's raster cell
};

Eagle1Decoder::DraftedTree Eagle1Decoder::draft_tree(const Tables& tab, EagleDrafterState& pairs, KvCache& dcache,
                                                     DecodeState& rows, const DecodeState::Span& cells,
                                                     const torch::Tensor& catchup) {
  const int64_t B = rows.tokens.size(0), T = tree_.size(), L = tree_.max_depth();
  const auto device = rows.tokens.device();
  DraftedTree tree{torch::zeros({B, T}, torch::TensorOptions().dtype(torch::kInt64).device(device)),
                   torch::zeros({B, T}, torch::TensorOptions().dtype(torch::kFloat64).device(device)),
                   {draft_probs(catchup.unsqueeze(1))},
                   (rows.n - 1).view({B, 1})};
  tree.tokens.select(1, 0).copy_(rows.tokens_at(-1).view({B}));
  torch::Tensor drafted;                             // drafter outputs of the block entries so far [R, W, D]
  const auto u = params_.greedy() ? torch::Tensor()  // [B, draws]
                                  : rows.uniforms(tree.root_cells + tab.draw_depths, Purpose::kDraft, tab.draw_indices);
  for (int64_t d = 0; d < L; ++d) {
    const auto& nodes = tab.expanded[size_t(d)];
    if (nodes.empty()) break;
    const auto& lv = tab.levels[size_t(d)];
    const int64_t M = int64_t(nodes.size()), n = lv.draws;
    torch::Tensor drawn, cond_prob;  // [B, M, n]
    if (params_.greedy()) {
      drawn = std::get<1>(tree.q[size_t(d)].topk(n, -1));
      cond_prob = torch::ones({B, M, n}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
    } else {
      std::tie(drawn, cond_prob) =
          draw_without_replacement(tree.q[size_t(d)], u.narrow(1, lv.draw_offset, M * n).reshape({B, M, n}));
    }
    tree.tokens.index_copy_(1, lv.children, drawn.reshape({B, M * n}).index_select(1, lv.drawn_at));
    tree.probs.index_copy_(1, lv.children, cond_prob.reshape({B, M * n}).index_select(1, lv.drawn_at));
    // The drafter at the next depth's expanded nodes (one block extending the last): input = (its parent's
    // output, its token).
    if (!lv.next_nodes.defined()) break;
    const int64_t K = lv.next_nodes.size(0);
    auto source = drafted.defined() ? torch::cat({catchup.unsqueeze(1), drafted}, 1) : catchup.unsqueeze(1);
    auto out = pairs.draft(dcache, source.index_select(1, lv.parent_slot), tree.tokens.index_select(1, lv.next_nodes),
                           cells.at(d, 1).expand({B, K}), lv.mask);
    drafted = drafted.defined() ? torch::cat({drafted, out}, 1) : out;
    tree.q.push_back(draft_probs(out));
  }
  return tree;
}

DecodeResult Eagle1Decoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  const int64_t B = request.row_count(), N = target_.gpt()->config().image_tokens();
  const int64_t T = tree_.size(), L = tree_.max_depth();
  const auto device = target_.gpt()->device();
  const auto& tab = tables(B, device);

  auto tcache = target_.make_cache(B, T, /*static_steps=*/true);
  const int64_t W = L + 1;  // the pairs' block: an accepted path holds the root and L nodes
  auto rows = graphs_.rows(request, N, T, device, /*path_width=*/L + 2);
  EagleDrafterState pairs(target_, tcache, drafter_, drafter_steps_, B, W);
  auto dcache = pairs.drafter_cache(tab.block_entries + W + 1);
  pairs.prepare(rows, graphs_);
  IterationLoop loop(graphs_, rows, request, pairs.caches(dcache), pairs.pooled_lengths(dcache),
                     IterationLoop::Commit::kTree);
  // ---- rows taking samples (every row at the start, then each row whose image is done): the target's prefill,
  // token 0 and the first pairs
  const auto start = [&](const RowFill& fill) { pairs.start(params_, fill, rows, dcache); };

  loop.run(start, [&](const std::vector<int64_t>& active) {
    // The iteration on the device: catch up, draft, verify, walk, commit. Nothing in it reads the host.
    const auto iteration = [&] {
      // ---- catch up, then draft the static tree level by level
      const auto catchup = pairs.catch_up(dcache, rows);  // [R, D]
      const auto cells = rows.span(0, L + 1);             // the cells of depths 1 .. L + 1, once
      const auto tree = draft_tree(tab, pairs, dcache, rows, cells, catchup);
      loop.end_draft();

      // ---- verify: one target forward over every row's tree, its inputs on the device (a node at depth d sits
      // at raster index root + d, clamped to the last cell)
      auto vout =
          target_.decode_block(tcache, tree.tokens, (tree.root_cells + tab.node_depth).clamp_max(N - 1), tab.tree_mask);
      loop.end_verify();

      // ---- walk every row's tree from the root (decoding/common/verify: all rows at once). The node tokens are
      // already on the device and the depths are the static tree's; a child slot is the child's rank, and a
      // child the drafter could not draw (nothing left in q) is no child.
      const int64_t C = tab.C;
      const auto drawn_kid = tree.probs.gather(1, tab.static_kids.clamp_min(0).expand({B, T * C})) > 0;
      const auto kids = torch::where(tab.static_kids.ge(0).logical_and(drawn_kid), tab.static_kids, -1).view({B, T, C});
      const TreeTables tables{tree.tokens, tab.node_depth.expand({B, T}), kids};
      const std::vector<int64_t> lengths(static_cast<size_t>(B), L);
      const auto verdict =
          walk_trees(rows, rule_, params_, tables, vout.logits, lengths, L,
                     params_.greedy() ? torch::Tensor() : torch::cat(tree.q, 1), tab.q_slot.expand({B, T}), cells.all);
      rows.commit_tree_on_device(verdict, tree.tokens);
      // ---- keep the accepted path in the target cache; queue its pairs for the drafter
      pairs.keep_paths(rows, verdict.path, vout.hidden);
    };
    loop.device_half(pairs.iteration_key(dcache, /*shape=*/{}, T, tab.drafter_widths), iteration);
    for (int64_t b : active) rows.stats_of(b).tree_depth += double(L);
    return tab.draft_forwards;
  });
  return loop.result();
}

namespace {
// eagle1, lanternpp and coolsd: one static-tree decoder, their own rule by default.
DecoderEntry eagle1_family_entry(const std::string& name, const std::string& summary, const std::string& default_rule) {
  DecoderEntry e;
  e.name = name;
  e.summary = summary;
  e.drafters = {"eagle_head"};
  e.read = [default_rule](DecoderFields& f, DecoderConfig& c) {
    // LANTERN++'s LlamaGen default tree.
    c.method = f.word<StaticTree>("tree", "naive_extend_57", named_static_tree);
    read_rule(f, c, default_rule);
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    return std::make_unique<Eagle1Decoder>(c.name, m.target, m.eagle, c.sampling, c.settings<StaticTree>(), c.accept,
                                           m.neighbours);
  };
  return e;
}
const DecoderRegistration kEagle1Registration(eagle1_family_entry(
    "eagle1", "EAGLE-1: a feature-level draft head fills a static tree, drawing children without replacement",
    "exact"));
const DecoderRegistration kLanternPpRegistration(eagle1_family_entry(
    "lanternpp", "LANTERN++: EAGLE-1's static trees with a multiplicatively bounded relaxed acceptance", "lanternpp"));
const DecoderRegistration kCoolSdRegistration(eagle1_family_entry(
    "coolsd", "Cool-SD: EAGLE-1's static trees with depth-weighted acceptance w_i and resampling from G*", "coolsd"));
}  // namespace

}  // namespace vispec
