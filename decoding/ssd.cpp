// SSD (Xiang et al., the SSD paper; docs/algorithms.md "SSD"). No public code: this is
// our reading of the paper, step by step.
//
//   heads      h^(cell + offset) = f([h_pre(cell); e(token(cell))]) (models/drafters/ssd_heads): horizontal heads for
//              the next kh cells of a row, vertical heads for the cell 1 .. kv rows below; a draft is sampled
//              from the target's own output head on RMSNorm(h^) (after CFG and the sampling chain; the argmax
//              at T = 0). h_pre(cell) is the target's state whose logits gave token(cell).
//   first row  speculative decoding with the horizontal heads: from the newest token, kh drafts; ONE target
//              forward; accept left to right by the acceptance rule (exact: min(1, p/q)); at the first
//              rejection sample the rule's rejection distribution (exact: the residual); all accepted: a bonus
//              token from p (decoding/common/verify's chain, all rows at once). The row's last token is then
//              committed by one forward.
//   later rows the kv rows below the newest committed row are drafted at once by the vertical heads from that
//              row's states and tokens, then verified and corrected in ROUNDS, one target forward each over
//              the drafted rows (the committed rows in the cache): every drafted cell independently keeps its
//              token with the rule's probability (exact: min(1, p/q)) or replaces it by a sample of the rule's
//              rejection distribution (exact: norm(max(0, p - q))), p read off this round's forward (a cell is
//              depth 1 of a chain of 1 for Cool-SD's weights: our choice, the paper uses the exact rule); nothing is
//              rolled back, the next round re-reads the corrected rows, and a kept or replaced token counts as a draw
//              from this round's p (q := p). Then ONE forward commits a row to the cache and gives its states (for the
//              next vertical drafts) and the distribution of the next row's first cell.
//   staging    kv = 1: r rounds, commit. kv >= 2: b rounds on all kv rows, commit the first, then i rounds on
//              the rest before each further commit.
// Lossy by design: a cell is verified against its context of that round, which later rounds may change. At
// T = 0 with r >= W rounds each row is AR's greedy row (round j fixes cell j - 1 for good: a Jacobi sweep).
// At T = 0 a round sets every cell to the target's argmax there (what min(1, p/q) and the residual do with
// one-hot p and q), with no vocabulary-wide tensors.
// Continuous batching: every row follows its own schedule (the first row's chain iterations, the commit of its
// last token, then each block's rounds and commits), one target forward per TICK, and a row whose image is done
// takes the unit's next sample while the others go on (decoding/common/decode_state.h). A tick's forward is one
// block of T = max(kh + 1, kv W) entries per row: a chain's [newest, drafts] or the cells of a round or commit,
// the rest padding past them that nothing keeps; each row's phase is applied where its plan says (the plan a
// small table the host uploads before the tick: only the first row's iterations depend on the device, every
// later tick is known in advance). The tick's operators depend only on which phases some row is in, so on a GPU
// each tick is replayed as one CUDA graph per (phases, length bucket) (decoding/common/iteration_graphs.h), with
// one read of the rows' advances; a sample's tokens are the same whether it started the batch or took a row.
// Randomness per (seed, sample id, raster index): kSample for token 0 and bonus tokens, kDraft for drafts,
// kAccept/kResample (first row; later rows with draw = round).
#include "decoding/ssd.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/iteration_loop.h"

namespace vispec {

std::vector<SsdTick> ssd_block_ticks(int64_t y, int64_t height, const SsdParams& p) {
  const int64_t rows = std::min(p.kv, height - y);
  std::vector<SsdTick> ticks;
  int64_t round = 0;
  const auto rounds = [&](int64_t from, int64_t n) {
    for (int64_t j = 0; j < n; ++j) ticks.push_back({false, from, y + rows - from, round++});
  };
  rounds(y, rows == 1 && p.kv == 1 ? p.r : p.b);  // on every drafted row, before the first commit
  for (int64_t k = 0; k < rows; ++k) {
    ticks.push_back({true, y + k, 1, 0});
    if (k + 1 < rows) rounds(y + k + 1, p.i);  // on the rows left, before each further commit
  }
  return ticks;
}

int64_t ssd_forwards_after_first_row(int64_t height, const SsdParams& p) {
  int64_t forwards = 1;  // the commit of the first row's last token
  for (int64_t y = 1; y < height; y += std::min(p.kv, height - y))
    forwards += int64_t(ssd_block_ticks(y, height, p).size());
  return forwards;
}

SsdDecoder::SsdDecoder(Gpt target, SsdHeads heads, SamplingParams params, SsdParams ssd, AcceptanceParams accept,
                       std::shared_ptr<const CodebookNeighbours> neighbours)
    : target_(std::move(target), params.cfg_scale), heads_(std::move(heads)), params_(params), ssd_(ssd),
      first_row_rule_(chain_rule(accept, neighbours.get(), ssd.kh, target_.gpt()->device())),
      cell_rule_(chain_rule(accept, neighbours.get(), 1, target_.gpt()->device())) {
  VISPEC_ASSERT(ssd_.kh >= 1 && ssd_.kh <= heads_->horizontal_count(), "kh ", ssd_.kh, " but the heads have ",
                heads_->horizontal_count(), " horizontal heads");
  VISPEC_ASSERT(ssd_.kv >= 1 && ssd_.kv <= heads_->vertical_count(), "kv ", ssd_.kv, " but the heads have ",
                heads_->vertical_count(), " vertical heads");
}

namespace {
// A tick's plan per row (SsdDecoder::Run::plan_table's columns) and the kinds of tick.
enum PlanColumn : int64_t { kKind, kFirst, kWidth, kRoundIndex, kBlockFirst, kDrafted, kPlanColumns };
enum TickKind : int64_t { kChain, kRound, kCommit, kIdle };
}  // namespace

// One decode: its state, the rows' host schedule, and the tick's phases as methods, so that decode() reads as the
// paper's steps.
struct SsdDecoder::Run {
  // A row's place in its schedule (host): y = 0, the first row (tick 0: its chain iterations, 1: the commit of
  // its last token); else the block of image rows from y, at tick `tick` of ssd_block_ticks(y).
  struct Stage {
    int64_t y = 0, tick = 0;
  };

  Run(SsdDecoder& decoder, const DecodeRequest& request);
  // Rows taking samples (every row at the start, then each row whose image is done): the prefill, token 0 as AR
  // samples it, cell 0's state the prefill's last, and the row's schedule at its first row.
  void start(const RowFill& fill);
  // Each active row's tick, planned on the host and uploaded (its stage: the schedule's next step); returns the
  // graph variant's key (which phases the tick runs) and counts the rows' drafter forwards.
  StepKey plan(const std::vector<int64_t>& active);
  // The tick on the device: draft, one forward, then each row's phase (the phases named in `phases`, those of
  // some row), each a method below.
  void tick(const StepKey& phases);
  struct Tick;
  Tick read_plan();
  void draft_chains(Tick& t);
  void draft_blocks();
  void forward(Tick& t, bool chains);
  void verify_chains(Tick& t);
  void verify_rounds(Tick& t);
  void commit_rows(Tick& t);
  // After the tick's read: each active row's stage moves on.
  void advance(const std::vector<int64_t>& active);

  // A head's drafts from source states [R, M, D] and tokens [B, M] for the cells `cells` [B, M]: the guided,
  // processed q [B, M, V] (undefined at T = 0) and the drafted tokens [B, M] (the argmax at T = 0).
  std::pair<torch::Tensor, torch::Tensor> draft(int64_t head, const torch::Tensor& src_states,
                                                const torch::Tensor& src_tokens, const torch::Tensor& cells);
  // [B] per sample -> [R, 1] per row of every CFG stream.
  torch::Tensor every_stream(const torch::Tensor& per_sample) const { return per_sample.repeat({R / B}).view({R, 1}); }

  SsdDecoder& d;
  const DecodeRequest& request;
  Gpt gpt;
  const int64_t B, W, H, N, R, V, D, K, T;  // T: a tick's block, the widest of the schedule's
  const torch::Device device;
  const torch::TensorOptions i64;
  const bool greedy;
  DecodeState rows;
  KvCache cache;
  IterationLoop loop;
  std::vector<Stage> stages;  // each row's, on the host
  // State of the decode in the IterationGraphs' buffers, written in place by replayed ticks:
  torch::Tensor plan_table;   // [B, kPlanColumns] int64: each row's tick, uploaded before it
  torch::Tensor states;       // h_pre of every cell (both CFG streams) [R, N + 1, D], filled as cells commit
  torch::Tensor next_logits;  // [B, V] the guided logits of the cell after each row's last committed image row
  torch::Tensor q_block;      // [B, kv W, V] the q of each row's block's cells (sampling only)
  torch::Tensor column;       // [1, T]: 0 .. T - 1
};

DecodeResult SsdDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  Run run(*this, request);
  run.loop.run([&](const RowFill& fill) { run.start(fill); },
               [&](const std::vector<int64_t>& active) {
                 const auto phases = run.plan(active);
                 auto key = phases;
                 key.push_back(run.cache.bucket_for(run.T));
                 run.loop.device_half(key, [&] { run.tick(phases); });
                 run.advance(active);
                 return int64_t(0);  // the drafter forwards: counted per row by plan()
               });
  return run.loop.result();
}

SsdDecoder::Run::Run(SsdDecoder& decoder, const DecodeRequest& request)
    : d(decoder), request(request), gpt(decoder.target_.gpt()), B(request.row_count()), W(gpt->config().grid_size),
      H(gpt->config().grid_size), N(W * H), R(decoder.target_.rows(B)), V(gpt->config().vocab_size),
      D(gpt->config().dim), K(decoder.ssd_.kh), T(std::max(K + 1, decoder.ssd_.kv * W)), device(gpt->device()),
      i64(torch::TensorOptions().dtype(torch::kInt64).device(device)), greedy(decoder.params_.greedy()),
      rows(decoder.graphs_.rows(request, N, T + 1, device)),
      cache(decoder.target_.make_cache(B, T, /*static_steps=*/true)),
      loop(decoder.graphs_, rows, request, {&cache}, {decoder.target_.pooled_lengths(cache)},
           IterationLoop::Commit::kChain),
      stages(static_cast<size_t>(B)) {
  plan_table = d.graphs_.state(rows, "ssd_plan", {B, kPlanColumns}, i64);
  states = d.graphs_.state(rows, "ssd_states", {R, N + 1, D}, gpt->tok_embeddings->weight.options());
  next_logits = d.graphs_.state(rows, "ssd_next_logits", {B, V}, i64.dtype(torch::kFloat32));
  if (!greedy) q_block = d.graphs_.state(rows, "ssd_q_block", {B, d.ssd_.kv * W, V}, i64.dtype(torch::kFloat32));
  column = d.graphs_.state(rows, "ssd_column", {1, T}, i64);  // where a replayed tick finds it
  column.copy_(torch::arange(T, i64).view({1, T}));
}

std::pair<torch::Tensor, torch::Tensor> SsdDecoder::Run::draft(int64_t head, const torch::Tensor& src_states,
                                                               const torch::Tensor& src_tokens,
                                                               const torch::Tensor& cells) {
  const auto h = d.heads_->head(head)(src_states, gpt->embed_image(d.target_.both_streams(src_tokens)));
  const auto logits = d.target_.output_logits(gpt->norm(h));
  if (greedy) return {torch::Tensor(), greedy_tokens(logits)};
  const int64_t M = src_tokens.size(1);
  return probs_and_draw(logits, d.params_, rows.uniforms(cells, Purpose::kDraft).view({B, M}));
}

void SsdDecoder::Run::start(const RowFill& fill) {
  const auto pre = d.target_.prefill_rows(cache, fill.rows, fill.conditions);
  std::vector<int64_t> stream_rows;  // the fill's rows in every stream
  for (int64_t s = 0; s < R / B; ++s)
    for (int64_t b : fill.rows) stream_rows.push_back(s * B + b);
  const auto index = torch::tensor(stream_rows, torch::kInt64).to(device);
  states.select(1, 0).index_copy_(0, index, pre.hidden.select(1, pre.hidden.size(1) - 1).index_select(0, index));
  rows.start(fill, pre.logits, d.params_);
  for (int64_t b : fill.rows) {
    stages[size_t(b)] = Stage{};
    rows.stats_of(b).target_forwards = 1;
  }
}

// ---- the schedule: the first row's chain iterations, the commit of its last token, then blocks of kv image rows
// (their ticks from ssd_block_ticks: rounds of verify-and-correct and commits). Only the first row's iterations
// depend on the device (how many drafts each accepts); every later tick is known in advance.
StepKey SsdDecoder::Run::plan(const std::vector<int64_t>& active) {
  auto table = torch::zeros({B, kPlanColumns}, torch::kInt64);
  auto t = table.accessor<int64_t, 2>();
  bool any_chain = false, any_draft = false, any_round = false, any_commit = false;
  for (int64_t b = 0; b < B; ++b) t[b][kKind] = kIdle;
  for (int64_t b : active) {
    const auto& stage = stages[size_t(b)];
    auto& stats = rows.stats_of(b);
    if (stage.y == 0) {
      const bool last = stage.tick > 0;  // the first row's last token, pending since its chain ended
      t[b][kKind] = last ? kCommit : kChain;
      t[b][kFirst] = W - 1, t[b][kWidth] = last ? 1 : K + 1;
      any_commit |= last, any_chain |= !last;
      if (!last) stats.draft_forwards += 1;  // the horizontal heads
      continue;
    }
    const auto ticks = ssd_block_ticks(stage.y, H, d.ssd_);
    const auto& tick = ticks[size_t(stage.tick)];
    t[b][kKind] = tick.commit ? kCommit : kRound;
    t[b][kFirst] = tick.first_row * W, t[b][kWidth] = tick.rows * W, t[b][kRoundIndex] = tick.round;
    t[b][kBlockFirst] = stage.y * W;
    any_commit |= tick.commit, any_round |= !tick.commit;
    if (stage.tick == 0) {  // the block's drafts, from the row above it (the vertical heads)
      t[b][kDrafted] = std::min(d.ssd_.kv, H - stage.y);
      any_draft = true;
      stats.draft_forwards += 1;
    }
    if (!tick.commit && tick.round == 0) stats.drafted += tick.rows * W;  // the block's first round tests its drafts
  }
  upload_to(plan_table, table);
  return {T, any_chain, any_draft, any_round, any_commit};
}

void SsdDecoder::Run::advance(const std::vector<int64_t>& active) {
  for (int64_t b : active) {
    auto& stage = stages[size_t(b)];
    if (stage.y == 0) {
      if (stage.tick > 0) stage = Stage{1, 0};                  // the last token committed: the blocks begin
      else if (rows.committed[size_t(b)] >= W) stage.tick = 1;  // the chain reached the row's end
      continue;
    }
    if (++stage.tick == int64_t(ssd_block_ticks(stage.y, H, d.ssd_).size()))
      stage = Stage{stage.y + std::min(d.ssd_.kv, H - stage.y), 0};
  }
}

// One tick: the plan's columns as the phases read them, and what the phases add up (each row's cache entries
// kept, its advance, its read's statistics, which outputs become which cells' states).
struct SsdDecoder::Run::Tick {
  torch::Tensor first, width, round;              // [B, 1] each: the plan's
  torch::Tensor is_chain, is_round, is_commit;    // [B, 1] bool: each row's kind of tick
  torch::Tensor in_block, cells;                  // [B, T]: the block entries that are cells, and their cells
  torch::Tensor block;                            // [B, T]: the block's tokens as the tick found them
  DecodeState::Span newest;                       // each row's newest cell (offset -1), the drafts' and the bonus's
  torch::Tensor chain_drafts, chain_q;            // the first row's drafts [B, K] and their q [B, K, V]
  CfgOutput out;                                  // the forward's
  torch::Tensor keep, advance, accepted, tested;  // [B] each
  torch::Tensor state_cells, fresh;               // [B, T]: the cells whose states the outputs are, and which are
};

SsdDecoder::Run::Tick SsdDecoder::Run::read_plan() {
  Tick t;
  const auto kind = plan_table.select(1, kKind).view({B, 1});
  t.first = plan_table.select(1, kFirst).view({B, 1});
  t.width = plan_table.select(1, kWidth).view({B, 1});
  t.round = plan_table.select(1, kRoundIndex).view({B, 1});
  t.is_chain = kind.eq(kChain), t.is_round = kind.eq(kRound), t.is_commit = kind.eq(kCommit);
  t.in_block = column.lt(t.width);
  t.cells = (t.first + column).clamp_max(N - 1);
  t.newest = rows.span(-1, K + 2);
  for (auto* x : {&t.keep, &t.advance, &t.accepted, &t.tested}) *x = torch::zeros({B}, i64);
  t.state_cells = (t.first + 1 + column).clamp_max(N);  // a commit's outputs: the states of the cells after
  t.fresh = t.is_commit.logical_and(t.in_block);
  return t;
}

void SsdDecoder::Run::tick(const StepKey& phases) {
  const bool chains = phases[1] != 0, drafts = phases[2] != 0, rounds = phases[3] != 0, commits = phases[4] != 0;
  auto t = read_plan();
  if (chains) draft_chains(t);
  if (drafts) draft_blocks();
  loop.end_draft();
  forward(t, chains);
  loop.end_verify();
  if (chains) verify_chains(t);
  if (rounds) verify_rounds(t);
  if (commits) commit_rows(t);
  const auto slots = t.state_cells.repeat({R / B, 1}).unsqueeze(-1).expand({R, T, D});
  states.scatter_(1, slots,
                  torch::where(t.fresh.repeat({R / B, 1}).unsqueeze(-1), t.out.hidden, states.gather(1, slots)));
  cache.advance(t.keep);
  rows.commit_cells_on_device(t.advance, t.accepted, t.tested);
}

// ---- draft: the first row's chains from each row's newest cell (the horizontal heads)
void SsdDecoder::Run::draft_chains(Tick& t) {
  const auto src_states = states.gather(1, (every_stream(rows.n) - 1).unsqueeze(-1).expand({R, 1, D}));
  const auto src_tokens = rows.tokens_at(-1);
  std::vector<torch::Tensor> q_heads, x_heads;
  for (int64_t k = 0; k < K; ++k) {
    auto [q, x] = draft(k, src_states, src_tokens, t.newest.at(k, 1));
    if (q.defined()) q_heads.push_back(q.select(1, 0));
    x_heads.push_back(x.select(1, 0));
  }
  t.chain_drafts = torch::stack(x_heads, 1);
  if (!greedy) t.chain_q = torch::stack(q_heads, 1);
}

// ---- draft: the blocks that begin at this tick, from the image row above them (the vertical heads)
void SsdDecoder::Run::draft_blocks() {
  const auto block_first = plan_table.select(1, kBlockFirst).view({B, 1});
  const auto drafted = plan_table.select(1, kDrafted).view({B, 1});
  const auto row = column.narrow(1, 0, W);
  const auto above = (block_first - W + row).clamp(0, N - 1);  // [B, W]
  const auto src_states = states.gather(1, above.repeat({R / B, 1}).unsqueeze(-1).expand({R, W, D}));
  const auto src_tokens = rows.tokens.gather(1, above);
  for (int64_t k = 0; k < d.ssd_.kv; ++k) {
    const auto at = (block_first + k * W + row).clamp_max(N - 1);
    auto [q, x] = draft(d.heads_->horizontal_count() + k, src_states, src_tokens, at);
    const auto mine = drafted.gt(k);  // [B, 1]: this row drafts row k of its block
    rows.tokens.scatter_(1, at, torch::where(mine, x, rows.tokens.gather(1, at)));
    if (!greedy) {
      auto slot = q_block.narrow(1, k * W, W);
      slot.copy_(torch::where(mine.unsqueeze(2), q, slot));
    }
  }
}

// ---- one forward over every row's block: a chain's [newest, drafts] or the cells of its round or commit
void SsdDecoder::Run::forward(Tick& t, bool chains) {
  t.block = rows.tokens.gather(1, t.cells);
  auto tokens = t.block, positions = t.cells;
  if (chains) {
    const auto chain = torch::cat({rows.tokens_at(-1), t.chain_drafts, t.block.narrow(1, K + 1, T - K - 1)}, 1);
    tokens = torch::where(t.is_chain, chain, tokens);
    positions = torch::where(t.is_chain, rows.positions(-1, T), positions);
  }
  t.out = d.target_.decode_block(cache, tokens, positions, causal_mask(T, device));
}

// ---- first row: the chain rule left to right; the rule's rejection sample at the first rejection, a bonus token
// where every draft is kept (decoding/common/verify's chain)
void SsdDecoder::Run::verify_chains(Tick& t) {
  const auto& rule = d.first_row_rule_;
  const auto chain = t.is_chain.view({B});
  const auto count = torch::where(chain, (W - rows.n).clamp(0, K), torch::zeros({B}, i64));
  const auto u = chain_uniforms(rows, K, rule, greedy, t.newest.at(0, K + 1));
  const auto logits = t.out.logits.narrow(1, 0, K + 1);
  const auto verdict = greedy
                           ? verify_chain_greedy(rule, greedy_tokens(logits), t.chain_drafts, count, u)
                           : verify_chain(rule, target_probs(logits, d.params_), t.chain_q, t.chain_drafts, count, u);
  commit_chain(rows.tokens, rows.n, W, t.chain_drafts, verdict);  // writes below the row's end only: chains' rows
  const auto kept = torch::where(chain, torch::minimum(verdict.accepted + 1, W - rows.n), 0);
  // Block entries j < kept hold cells n - 1 + j (n as the tick began), whose contexts are all committed: their
  // outputs are the states of cells n + j.
  t.state_cells = torch::where(t.is_chain, (rows.n.view({B, 1}) + column).clamp_max(N), t.state_cells);
  t.fresh = t.fresh.logical_or(column.lt(kept.view({B, 1})));
  t.keep.add_(kept), t.advance.add_(kept);
  t.accepted.add_(torch::where(chain, verdict.accepted, 0)), t.tested.add_(count);
}

// ---- later rows: every cell of a round's block verified against this forward's p and corrected in place,
// nothing rolled back; a kept or replaced token is a draw from this round's p (q := p)
void SsdDecoder::Run::verify_rounds(Tick& t) {
  const auto logits = torch::cat({next_logits.unsqueeze(1), t.out.logits.narrow(1, 0, T - 1)}, 1);  // at each cell
  const auto mine = t.is_round.logical_and(t.in_block);
  CellVerdict verdict;
  if (greedy) {  // one-hot p and q: every cell becomes the target's argmax, kept where it already was
    verdict.tokens = greedy_tokens(logits);
    verdict.kept = verdict.tokens.eq(t.block);
  } else {
    const auto p = target_probs(logits, d.params_);
    const auto block_first = plan_table.select(1, kBlockFirst).view({B, 1});
    const auto slots = (t.first - block_first + column).clamp(0, d.ssd_.kv * W - 1).unsqueeze(2).expand({B, T, V});
    const auto q = q_block.gather(1, slots);
    verdict = verify_cells(d.cell_rule_, p, q, t.block, rows.uniforms(t.cells, Purpose::kAccept, t.round),
                           rows.uniforms(t.cells, Purpose::kResample, t.round));
    q_block.scatter_(1, slots, torch::where(mine.unsqueeze(2), p, q));
  }
  // (Other rows' cells written back as they are now: a chain's commit above may have written them.)
  rows.tokens.scatter_(1, t.cells, torch::where(mine, verdict.tokens, rows.tokens.gather(1, t.cells)));
  // The block's first round counts the drafts' own acceptance.
  t.accepted.add_(verdict.kept.logical_and(mine).logical_and(t.round.eq(0)).sum(1));
}

// ---- commits: the block's entries kept, their states, the next cell's logits; an image row advances the row
void SsdDecoder::Run::commit_rows(Tick& t) {
  const auto commit = t.is_commit.view({B}), width = t.width.view({B});
  const auto last = (t.width - 1).clamp(0, T - 1).unsqueeze(2).expand({B, 1, V});
  next_logits.copy_(torch::where(t.is_commit, t.out.logits.gather(1, last).squeeze(1), next_logits));
  t.keep.add_(torch::where(commit, width, 0));
  t.advance.add_(torch::where(commit.logical_and(t.first.view({B}).ge(W)), width, 0));  // (the first row's: counted)
}

namespace {
DecoderEntry ssd_entry() {
  DecoderEntry e;
  e.name = "ssd";
  e.summary = "SSD: horizontal and vertical heads draft a row ahead; verify-and-correct rounds per cell";
  e.drafters = {"ssd_heads"};
  e.read = [](DecoderFields& f, DecoderConfig& c) {
    SsdParams p;
    p.kh = f.whole("kh", p.kh, 1, 64);
    p.kv = f.whole("kv", p.kv, 1, 8);
    p.r = f.whole("r", p.r, 0, 1024);
    p.b = f.whole("b", p.b, 0, 1024);
    p.i = f.whole("i", p.i, 0, 1024);
    c.method = p;
    read_rule(f, c, "exact");
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    const auto& p = c.settings<SsdParams>();
    VISPEC_CHECK(p.kh <= m.ssd->horizontal_count() && p.kv <= m.ssd->vertical_count(), c.spec.where_of("kv"), ": kh ",
                 p.kh, ", kv ", p.kv, " but the SSD heads file has ", m.ssd->horizontal_count(), " horizontal and ",
                 m.ssd->vertical_count(), " vertical heads");
    return std::make_unique<SsdDecoder>(m.target, m.ssd, c.sampling, p, c.accept, m.neighbours);
  };
  return e;
}
const DecoderRegistration kSsdRegistration(ssd_entry());
}  // namespace

}  // namespace vispec
