// SJD-PAC: speculative Jacobi decoding with Proactive drafting and Adaptive Continuation (CVPR 2026;
// docs/algorithms.md "SJD-PAC"):
//
//   window    the root (the newest committed token) and `window` drafts: a full K-ary tree of D levels whose nodes
//             at depth d all carry the same K candidates G[0 .. K-1][d] (a product tree), then a chain of G[0][d]
//             under the first-candidate path down to depth M - 1: the main path. Depth d has one proposal Q[d],
//             from which its candidates were drawn, in order, without replacement
//   forward   ONE target pass over every window under its ancestor mask (a node at depth d sits at root + d)
//   walk      recursive rejection sampling from the root (decoding/common/verify's tree walk): at a node its
//             children in candidate order, x_k accepted with min(1, p_k(x_k) / q_k(x_k)), q_k = Q[d] without
//             x_0 .. x_{k-1} renormalised, p_{k+1} = norm(max(0, p_k - q_k)); the first accepted child is
//             descended into; when every child is rejected, or at a leaf, the next token is drawn from the last p
//   keep      the accepted path's entries in the cache, compacted where the path leaves the main one
//             (KvCache::keep_paths); the drawn token is the next root, a accepted drafts before it
//   continue  (adaptive continuation) each later depth e gets this forward's output p_e, taken at depth e - 1 of
//             the reference line (the accepted path, then its first candidates down the tree, then the main
//             chain), as its new proposal, and its old first candidate coupled to it (maximal coupling,
//             decoding/common/coupling.h: kept where u Q_old[e](x) < p_e(x), else redrawn from
//             norm(max(0, p_e - Q_old[e]))): a sample of p_e that agrees with the old draft as often as can be
//   draft     (proactive drafting) the new window's depth k is the old depth e = a + 1 + k: candidate 0 the coupled
//             draft (a draw of p_e where there was no draft), the other candidates draws of p_e without
//             replacement and without candidate 0; depths the old window did not reach take K distinct uniform
//             tokens and Q uniform, as every depth of a row's first window does
// Lossless: each depth's candidates are K draws without replacement from its Q, made before the forward that
// verifies them, and recursive rejection sampling over such draws commits samples of the target (the argument of
// EAGLE-1's walk). The authors' released code departs from this in five places, each of which biases its output:
// (1) it takes the longest path of passes, not the first accepted child at each node; (2) it draws siblings from
// the coupling's residual, while its walk assumes draws of Q_new without candidate 0; (3) it redraws a failed
// carried draft at a branching depth from p_K (the walk's residual after all K siblings), not from
// norm(max(0, p_e - Q_old[e])); (4) its first window draws candidates with replacement, while its walk assumes
// without; (5) after a fully accepted main path its next token is uniform, not a sample of p. PacRelease keeps
// (4) and (5), one at a time, for the test that tells each apart (tests/test_sjd_pac.cpp); (1) is the walk itself,
// and the bias of (2) and (3) on the test's model is below what its samples resolve.
// At temperature 0 the walk accepts the target's argmax, whatever the candidates: they are the K most likely
// tokens of this forward's stale outputs (uniform draws where there are none), and the tokens are AR's.
// Randomness per (seed, sample id, position): kInit (draw = candidate) for a first window, kDraft (draw = the
// sample's iteration * 8 + candidate) for later candidates, kCouple (draw = the iteration) for the coupling's
// test, kAccept (draw = child slot) for the walk's tests, kResample/kSample for the next token.
#include "decoding/sjd_pac.h"

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/coupling.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/draft_tree.h"
#include "decoding/common/iteration_loop.h"
#include "decoding/common/sampler.h"

namespace vispec {

int64_t PacShape::tree_nodes() const {
  int64_t nodes = 0;
  for (int64_t level = 0, count = 1; level < depth; ++level, count *= width) nodes += count;
  return nodes;
}

SjdPacDecoder::SjdPacDecoder(Gpt target, SamplingParams params, PacShape shape, PacRelease release)
    : target_(std::move(target), params.cfg_scale), params_(params), shape_(shape), release_(release),
      rule_(chain_rule(AcceptanceParams{}, nullptr, shape.main_depth() - 1, target_.gpt()->device())) {
  VISPEC_ASSERT(shape_.width >= 1 && shape_.width <= 8 && shape_.depth >= 1 && shape_.tree_nodes() <= shape_.window,
                "SJD-PAC's window must hold its K-ary tree and one chain node");
}

// The window's structure, the same every iteration.
struct SjdPacDecoder::Tables {
  int64_t S = 0, M = 0;    // nodes (the root's included) and the main path's depths
  torch::Tensor depth;     // [1, S]
  torch::Tensor cell;      // [S]: each node's candidate in a row's grid [K, M], flattened (rank * M + depth)
  torch::Tensor children;  // [1, S * K]: each node's child of each rank, -1 where none
  torch::Tensor q_slot;    // [1, S]: a node's depth where it has children (their Q is Q[depth + 1]), -1 for leaves
  torch::Tensor mask;      // [B, S, S]: every node attends itself and its ancestors
  torch::Tensor line;      // [S, M]: the reference line of a path that ends at each node, a node per depth
};

PacTree pac_tree(const PacShape& s) {
  const int64_t M = s.main_depth();
  PacTree t;
  t.parent = {-1}, t.depth = {0}, t.rank = {0};
  std::vector<int64_t> level{0};
  for (int64_t d = 1; d < s.depth; ++d) {
    std::vector<int64_t> next;
    for (int64_t p : level)
      for (int64_t b = 0; b < s.width; ++b) {
        next.push_back(int64_t(t.parent.size()));
        t.parent.push_back(p), t.depth.push_back(d), t.rank.push_back(b);
      }
    t.main.push_back(level.front());  // each level's first node is on the main path
    level = std::move(next);
  }
  t.main.push_back(level.front());
  for (int64_t d = s.depth; d < M; ++d) {
    t.main.push_back(int64_t(t.parent.size()));
    t.parent.push_back(t.main[size_t(d - 1)]), t.depth.push_back(d), t.rank.push_back(0);
  }
  return t;
}

const SjdPacDecoder::Tables& SjdPacDecoder::tables(int64_t B, torch::Device device) {
  auto& made = tables_[{B, device.str()}];
  if (made) return *made;
  const int64_t K = shape_.width, M = shape_.main_depth();
  const auto tree = pac_tree(shape_);
  const auto &parent = tree.parent, &depth = tree.depth, &rank = tree.rank, &main = tree.main;
  const int64_t S = int64_t(parent.size());
  VISPEC_ASSERT(S == shape_.window + 1, "SJD-PAC's window laid out as ", S, " nodes for ", shape_.window, " drafts");
  std::vector<int64_t> cell(static_cast<size_t>(S)), slot(static_cast<size_t>(S), -1), kids(size_t(S * K), -1);
  for (int64_t i = 0; i < S; ++i) cell[size_t(i)] = rank[size_t(i)] * M + depth[size_t(i)];
  for (int64_t i = 1; i < S; ++i) {
    const int64_t p = parent[size_t(i)];
    kids[size_t(p * K + rank[size_t(i)])] = i;
    slot[size_t(p)] = depth[size_t(p)];
  }
  // A path ending at node i: its own nodes, then first candidates while the tree has them, then the main chain.
  std::vector<int64_t> line(size_t(S * M));
  for (int64_t i = 0; i < S; ++i) {
    for (int64_t n = i; n >= 0; n = parent[size_t(n)]) line[size_t(i * M + depth[size_t(n)])] = n;
    for (int64_t j = depth[size_t(i)] + 1, below = i; j < M; ++j) {
      below = below >= 0 ? kids[size_t(below * K)] : -1;
      line[size_t(i * M + j)] = below >= 0 ? below : main[size_t(j)];
    }
  }
  auto t = std::make_shared<Tables>();
  t->S = S, t->M = M;
  const auto on_device = [&](const std::vector<int64_t>& v) { return torch::tensor(v, torch::kInt64).to(device); };
  t->depth = on_device(depth).view({1, S});
  t->cell = on_device(cell);
  t->children = on_device(kids).view({1, S * K});
  t->q_slot = on_device(slot).view({1, S});
  DraftTree shape;  // the ancestor mask's input
  shape.parent = parent, shape.depth = depth, shape.token.assign(size_t(S), 0);
  t->mask = tree_masks(std::vector<DraftTree>(size_t(B), shape), S).to(device);
  t->line = on_device(line).view({S, M});
  made = std::move(t);
  return *made;
}

// One decode: its state, and its phases as methods, so that decode() reads as the paper's steps.
struct SjdPacDecoder::Run {
  Run(SjdPacDecoder& decoder, const DecodeRequest& request);
  // Rows taking samples (every row at the start, then each row whose image is done): prefill, token 0 as AR
  // samples it, and a first window of K distinct uniform tokens per depth under uniform proposals.
  void first_window(const RowFill& fill);
  // The iteration on the device: window, verify, walk, commit, continuation. Nothing in it reads the host.
  void iteration();
  // The continuation: the next window from this forward's outputs (logits [B, S, V]) and the walk's verdict.
  void next_window(const TreeVerdict& verdict, const torch::Tensor& logits);
  // Every row's uniforms at the new depths 1 .. M - 1 (positions `at` [B, M - 1]), one per candidate:
  // [B, M - 1, K].
  torch::Tensor candidate_uniforms(const torch::Tensor& at, Purpose purpose, const torch::Tensor& draws);

  SjdPacDecoder& d;
  const int64_t N, V, K, D;
  const torch::Device device;
  const torch::TensorOptions i64, f64, f32;
  const bool greedy;
  DecodeState rows;
  const int64_t B;
  const Tables& tab;
  const int64_t S, M;
  KvCache cache;
  // Each row's next window, state that every iteration rewrites in place: the candidates G [B, K, M] (column 0,
  // the root's, unused), each one's conditional draw probability (0: its Q had nothing left to draw), and the
  // proposals Q [B, M, V] (sampling only).
  torch::Tensor grid, drawn, proposal;
  const torch::Tensor candidate;  // [1, 1, K]: 0 .. K - 1
  IterationLoop loop;
};

DecodeResult SjdPacDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  Run run(*this, request);
  run.loop.run([&](const RowFill& fill) { run.first_window(fill); },
               [&](const std::vector<int64_t>&) {
                 run.loop.device_half({run.S, run.K, run.D, run.cache.bucket_for(run.S)}, [&] { run.iteration(); });
                 return int64_t(0);
               });
  return run.loop.result();
}

SjdPacDecoder::Run::Run(SjdPacDecoder& decoder, const DecodeRequest& request)
    : d(decoder), N(decoder.target_.gpt()->config().image_tokens()), V(decoder.target_.gpt()->config().vocab_size),
      K(decoder.shape_.width), D(decoder.shape_.depth), device(decoder.target_.gpt()->device()),
      i64(torch::TensorOptions().dtype(torch::kInt64).device(device)), f64(i64.dtype(torch::kFloat64)),
      f32(i64.dtype(torch::kFloat32)), greedy(decoder.params_.greedy()),
      // The pad takes a committed path of up to M + 1 tokens past the image (S + 1 >= M + 1 columns).
      rows(decoder.graphs_.rows(request, N, /*pad=*/decoder.shape_.window + 2, device,
                                /*path_width=*/decoder.shape_.main_depth() + 1)),
      B(rows.batch()), tab(decoder.tables(B, device)), S(tab.S), M(tab.M),
      cache(decoder.target_.make_cache(B, S, /*static_steps=*/true)),
      grid(decoder.graphs_.state(rows, "grid", {B, K, M}, i64)),
      drawn(decoder.graphs_.state(rows, "drawn", {B, K, M}, f64)),
      proposal(greedy ? torch::Tensor() : decoder.graphs_.state(rows, "proposal", {B, M, V}, f32)),
      candidate(decoder.graphs_.state(rows, "candidate", {1, 1, K}, i64)),
      loop(decoder.graphs_, rows, request, {&cache}, {decoder.target_.pooled_lengths(cache)},
           IterationLoop::Commit::kTree) {
  candidate.copy_(torch::arange(K, i64).view({1, 1, K}));  // in a buffer of the graphs': a replay reads it there
}

torch::Tensor SjdPacDecoder::Run::candidate_uniforms(const torch::Tensor& at, Purpose purpose,
                                                     const torch::Tensor& draws) {
  const auto flat = at.unsqueeze(2).expand({B, M - 1, K}).reshape({B, (M - 1) * K});
  return rows.uniforms(flat, purpose, draws.expand({B, M - 1, K}).reshape({B, (M - 1) * K})).view({B, M - 1, K});
}

void SjdPacDecoder::Run::first_window(const RowFill& fill) {
  rows.start(fill, d.target_.prefill_rows(cache, fill.rows, fill.conditions).logits, d.params_);
  const auto u = candidate_uniforms(rows.positions(0, M - 1), Purpose::kInit, candidate);
  torch::Tensor tokens, probs;
  if (d.release_ == PacRelease::kFirstWindowReplacing) {  // the released code's draws: with replacement
    tokens = (u * double(V)).to(torch::kInt64).clamp_max(V - 1);
    probs = torch::ones_like(u, f64);
  } else {
    std::tie(tokens, probs) = draw_without_replacement(torch::full({B, M - 1, V}, 1.0 / double(V), f32), u);
  }
  auto tokens_of = torch::zeros({B, K, M}, i64), drawn_of = torch::ones({B, K, M}, f64);  // every row's, then
  tokens_of.narrow(2, 1, M - 1).copy_(tokens.permute({0, 2, 1}));                         // the fill's kept
  drawn_of.narrow(2, 1, M - 1).copy_(probs.permute({0, 2, 1}));
  const auto index = torch::tensor(fill.rows, torch::kInt64).to(device);
  grid.index_copy_(0, index, tokens_of.index_select(0, index));
  drawn.index_copy_(0, index, drawn_of.index_select(0, index));
  if (proposal.defined()) proposal.index_fill_(0, index, 1.0 / double(V));
  for (int64_t b : fill.rows) rows.stats_of(b).target_forwards = 1;
}

void SjdPacDecoder::Run::iteration() {
  // ---- the window: every node's candidate, the root each row's newest token
  auto node_tok = grid.view({B, K * M}).index_select(1, tab.cell);
  node_tok.select(1, 0).copy_(rows.tokens_at(-1).view({B}));
  const auto cells = rows.span(0, M);  // the walk's cells: depths 1 .. M
  loop.end_draft();

  // ---- one target forward over every window
  const auto out =
      d.target_.decode_block(cache, node_tok, ((rows.n - 1).view({B, 1}) + tab.depth).clamp_max(N - 1), tab.mask);
  loop.end_verify();

  // ---- the walk (a candidate its Q could not draw is no child), the commit, the path kept in the cache
  const auto kids = tab.children.expand({B, S * K});
  const auto can = drawn.view({B, K * M}).index_select(1, tab.cell).gather(1, kids.clamp_min(0)) > 0;
  const TreeTables tree{node_tok, tab.depth.expand({B, S}),
                        torch::where(kids.ge(0).logical_and(can), kids, -1).view({B, S, K})};
  auto verdict =
      walk_trees(rows, d.rule_, d.params_, tree, out.logits, std::vector<int64_t>(size_t(B), M - 1), M - 1,
                 greedy ? torch::Tensor() : proposal.narrow(1, 1, M - 1), tab.q_slot.expand({B, S}), cells.all);
  if (d.release_ == PacRelease::kUniformBonus) {  // the released code's token after a fully accepted main path
    const auto u = rows.uniforms(cells.at(M - 1, 1), Purpose::kInit, K).view({B});
    const auto uniform = (u * double(V)).to(torch::kInt64).clamp_max(V - 1);
    verdict.next = torch::where(verdict.accepted.eq(M - 1), uniform, verdict.next);
  }
  rows.commit_tree_on_device(verdict, node_tok);
  auto path = verdict.path.size(1) >= M
                  ? verdict.path.narrow(1, 0, M)
                  : torch::cat({verdict.path, torch::full({B, M - verdict.path.size(1)}, -1, i64)}, 1);
  cache.keep_paths(path.masked_fill(rows.n.ge(N).view({B, 1}), -1));
  next_window(verdict, out.logits);
}

void SjdPacDecoder::Run::next_window(const TreeVerdict& verdict, const torch::Tensor& logits_all) {
  // New depth k = 1 .. M - 1 is old depth e = a + 1 + k, whose target this forward computed at depth j = e - 1
  // of the reference line where j is inside the window.
  const auto j = verdict.accepted.view({B, 1}) + torch::arange(1, M, i64).view({1, M - 1});  // [B, M - 1]
  const auto reached = j.le(M - 1);
  const auto line = tab.line.index_select(0, verdict.path.gather(1, verdict.accepted.view({B, 1})).view({B}));
  // Only the reference line's outputs are processed (the walk processed the nodes it visited itself).
  const auto logits = logits_all.gather(1, line.gather(1, j.clamp_max(M - 1)).unsqueeze(2).expand({B, M - 1, V}));
  const auto p = greedy ? torch::softmax(logits, -1) : target_probs(logits, d.params_);
  const auto next_at = rows.positions(0, M - 1);  // the new depths' cells, after the commit
  const auto u = candidate_uniforms(next_at, Purpose::kDraft, rows.iteration.view({B, 1, 1}) * 8 + candidate);
  if (greedy) {  // the K most likely of each stale output, uniform tokens where there is none
    const auto fresh = (u * double(V)).to(torch::kInt64).clamp_max(V - 1);
    grid.narrow(2, 1, M - 1)
        .copy_(torch::where(reached.unsqueeze(2), std::get<1>(p.topk(K, -1)), fresh).permute({0, 2, 1}));
    drawn.fill_(1.0);
    return;
  }
  const auto q_new = torch::where(reached.unsqueeze(2), p, torch::full_like(p, 1.0 / double(V)));
  const auto e = (j + 1).clamp_max(M - 1);
  const auto carried = (j + 1).le(M - 1);  // an old first candidate at e
  const auto old = grid.select(1, 0).gather(1, e);
  const auto q_old = proposal.gather(1, e.unsqueeze(2).expand({B, M - 1, V}));
  const auto u_first = u.select(2, 0);
  const auto coupled =
      maximal_coupling(old, q_old, p, rows.uniforms(next_at, Purpose::kCouple, rows.iteration.view({B, 1})), u_first);
  const auto first =
      torch::where(carried, coupled, sample_from_probs(q_new.reshape({-1, V}), u_first.reshape(-1)).view({B, M - 1}));
  // Siblings at the branching depths: draws of Q_new without candidate 0, without replacement.
  const int64_t branching = std::min(D - 1, M - 1);
  if (K > 1 && branching > 0) {
    const auto from = q_new.narrow(1, 0, branching);
    const auto [siblings, probs] =
        draw_without_replacement(from.scatter(2, first.narrow(1, 0, branching).unsqueeze(2), 0.0),
                                 u.narrow(1, 0, branching).narrow(2, 1, K - 1));
    grid.narrow(1, 1, K - 1).narrow(2, 1, branching).copy_(siblings.permute({0, 2, 1}));
    drawn.narrow(1, 1, K - 1).narrow(2, 1, branching).copy_(probs.permute({0, 2, 1}));
  }
  grid.select(1, 0).narrow(1, 1, M - 1).copy_(first);
  drawn.select(1, 0).narrow(1, 1, M - 1).fill_(1.0);
  proposal.narrow(1, 1, M - 1).copy_(q_new);
}

namespace {
DecoderEntry sjd_pac_entry() {
  DecoderEntry e;
  e.name = "sjd_pac";
  e.summary =
      "SJD-PAC: SJD whose window is a K-ary tree then a chain, its later drafts coupled to this forward's "
      "outputs (lossless as corrected)";
  e.read = [](DecoderFields& f, DecoderConfig& c) {
    PacShape s;
    s.width = f.whole("width", s.width, 1, 8);
    s.depth = f.whole("depth", s.depth, 1, 4);
    s.window = f.whole("window", s.window, 1, 128);
    f.require(s.tree_nodes() <= s.window, "window",
              "must hold the width-ary tree of `depth` levels besides its root and one chain node: at least " +
                  std::to_string(s.tree_nodes()));
    c.method = s;
  };
  e.check_model = [](const DecoderConfig& c, const ModelConfig& model) {
    VISPEC_CHECK(c.settings<PacShape>().width <= model.gpt.vocab_size, c.spec.where_of("width"),
                 ": larger than the vocabulary of ", model.file, " (", model.gpt.vocab_size, ")");
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    return std::make_unique<SjdPacDecoder>(m.target, c.sampling, c.settings<PacShape>());
  };
  return e;
}
const DecoderRegistration kSjdPacRegistration(sjd_pac_entry());
}  // namespace

}  // namespace vispec
