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
// Nothing loops over rows: the first row reads its accepted counts once per iteration, the later rows never
// wait for the host until the image is done. On a GPU each first-row iteration and each block of later rows is
// replayed as one CUDA graph (decoding/common/iteration_graphs.h).
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

int64_t ssd_forwards_after_first_row(int64_t height, const SsdParams& p) {
  int64_t forwards = 1;  // the commit of the first row's last token
  for (int64_t y = 1; y < height;) {
    const int64_t rows = std::min(p.kv, height - y);
    forwards += rows == 1 ? (p.kv == 1 ? p.r : p.b) + 1 : p.b + 1 + (rows - 1) * (p.i + 1);
    y += rows;
  }
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

// One decode: its state, and its phases as methods, so that decode() reads as the paper's steps.
struct SsdDecoder::Run {
  using Plan = std::vector<std::pair<int64_t, int64_t>>;    // a block's rounds: (first row verified, how many)
  using Mark = std::function<void(double SampleStats::*)>;  // a phase of a block ends (where it is timed)

  Run(SsdDecoder& decoder, const DecodeRequest& request);
  void prefill();
  void first_row();
  void later_rows();

  // A head's drafts from source states [R, M, D] and tokens [B, M] for the cells `cells` [B, M]: the guided,
  // processed q [B, M, V] (undefined at T = 0) and the drafted tokens [B, M] (the argmax at T = 0).
  std::pair<torch::Tensor, torch::Tensor> draft(int64_t head, const torch::Tensor& src_states,
                                                const torch::Tensor& src_tokens, const torch::Tensor& cells);
  // Commits a row (its cells not in the cache yet, from `first`): one forward, kept whole; returns the guided
  // logits of the cell after it (the next row's first cell).
  torch::Tensor commit(int64_t first, int64_t count);
  // A block of later rows, on the device only: rows y .. y + drafted - 1 drafted from row y - 1, verified and
  // corrected in the rounds of `plan`, committed one by one.
  void block(int64_t y, int64_t drafted, const Plan& plan, const Mark& mark);
  // `rounds` rounds of verify-and-correct on image rows from .. end - 1, whose q is q_rows [B, T, V]; the block's
  // first round (round_index 0) counts the drafts' own acceptance, and round j draws with index j of the block.
  void verify_rounds(int64_t from, int64_t end, int64_t rounds, torch::Tensor& q_rows, int64_t& round_index,
                     const Mark& mark);

  SsdDecoder& d;
  const DecodeRequest& request;
  Gpt gpt;
  const int64_t B, W, H, N, R, V, D, K;
  const torch::Device device;
  const torch::TensorOptions i64;
  const bool greedy;
  DecodeState rows;
  KvCache cache;
  const std::vector<const torch::Tensor*> pooled;
  IterationLoop loop;  // the first row's iterations, and the clock of the whole decode
  // State of the decode in the IterationGraphs' buffers, written in place by replayed iterations and blocks:
  torch::Tensor states;            // h_pre of every cell (both CFG streams) [R, N + 1, D], filled as cells commit
  torch::Tensor next_logits;       // [B, V] the guided logits of the next row's first cell
  torch::Tensor first_round_kept;  // [B] the drafts each row's blocks kept in their first rounds
};

DecodeResult SsdDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  Run run(*this, request);
  run.prefill();
  run.first_row();
  run.later_rows();
  return run.loop.result();
}

SsdDecoder::Run::Run(SsdDecoder& decoder, const DecodeRequest& request)
    : d(decoder), request(request), gpt(decoder.target_.gpt()), B(request.batch()), W(gpt->config().grid_size),
      H(gpt->config().grid_size), N(W * H), R(decoder.target_.rows(B)), V(gpt->config().vocab_size),
      D(gpt->config().dim), K(decoder.ssd_.kh), device(gpt->device()),
      i64(torch::TensorOptions().dtype(torch::kInt64).device(device)), greedy(decoder.params_.greedy()),
      rows(decoder.graphs_.rows(request, N, K + 1, device)),
      cache(decoder.target_.make_cache(B, std::max(K + 1, decoder.ssd_.kv * W), /*static_steps=*/true)),
      pooled{decoder.target_.pooled_lengths(cache)},
      loop(decoder.graphs_, rows, request, {&cache}, pooled, IterationLoop::Commit::kChain, /*limit=*/W) {}

std::pair<torch::Tensor, torch::Tensor> SsdDecoder::Run::draft(int64_t head, const torch::Tensor& src_states,
                                                               const torch::Tensor& src_tokens,
                                                               const torch::Tensor& cells) {
  const auto h = d.heads_->head(head)(src_states, gpt->embed_image(d.target_.both_streams(src_tokens)));
  const auto logits = d.target_.output_logits(gpt->norm(h));
  if (greedy) return {torch::Tensor(), greedy_tokens(logits)};
  const int64_t M = src_tokens.size(1);
  return probs_and_draw(logits, d.params_, rows.uniforms(cells, Purpose::kDraft).view({B, M}));
}

torch::Tensor SsdDecoder::Run::commit(int64_t first, int64_t count) {
  const auto pos = torch::arange(first, first + count, i64).unsqueeze(0).expand({B, count}).contiguous();
  const auto out = d.target_.decode_block(cache, rows.tokens.narrow(1, first, count), pos, causal_mask(count, device));
  cache.advance();
  states.narrow(1, first + 1, count).copy_(out.hidden);
  return out.logits.select(1, count - 1);  // [B, V]
}

// ---- first: the prefill; token 0 is sampled as AR samples it, and cell 0's state is the prefill's last.
void SsdDecoder::Run::prefill() {
  auto& clock = loop.clock();
  const auto pre = d.target_.prefill(cache, request.conditions);
  cache.advance();
  states = d.graphs_.state(rows, "ssd_states", {R, N + 1, D}, pre.hidden.options());
  states.select(1, 0).copy_(pre.hidden.select(1, pre.hidden.size(1) - 1));
  rows.start(pre.logits, d.params_);
  for (auto& s : rows.stats) s.target_forwards = 1;
  clock.charge(clock.lap(), all_rows(B), &SampleStats::bookkeeping_ms);
}

// ---- first row: speculative decoding with the horizontal heads. rows.n[b]: tokens committed; the newest is
// pending (not in the cache yet). As SD's, an iteration runs on the device up to its one read, and is replayed
// as one CUDA graph (decoding/common/iteration_graphs.h).
void SsdDecoder::Run::first_row() {
  loop.run(nullptr, [&](const std::vector<int64_t>&) {
    const auto iteration = [&] {
      // Every cell the iteration reads, once: the newest (offset -1), the drafts' and the bonus's.
      const auto cells = rows.span(-1, K + 2);
      // Every stream of sample b drafts from the state and token of b's newest cell.
      const auto n_streams = rows.n.repeat({R / B}).view({R, 1});
      const auto src_states = states.gather(1, (n_streams - 1).unsqueeze(-1).expand({R, 1, D}));
      const auto src_tokens = rows.tokens_at(-1);
      std::vector<torch::Tensor> q_heads, x_heads;
      for (int64_t k = 0; k < K; ++k) {
        auto [q, x] = draft(k, src_states, src_tokens, cells.at(k, 1));
        if (q.defined()) q_heads.push_back(q.select(1, 0));
        x_heads.push_back(x.select(1, 0));
      }
      const auto drafts = torch::stack(x_heads, 1);  // [B, K]
      loop.end_draft();

      // The pending token, then the drafts: p at cells n .. n + K.
      const auto out = d.target_.decode_block(cache, torch::cat({src_tokens, drafts}, 1), cells.at(-1, K + 1),
                                              causal_mask(1 + K, device));
      loop.end_verify();
      const auto& rule = d.first_row_rule_;
      const auto count = (W - rows.n).clamp(0, K);  // drafts past the row's end take no part
      const auto u = chain_uniforms(rows, K, rule, greedy, cells.at(0, K + 1));
      const auto verdict =
          greedy ? verify_chain_greedy(rule, greedy_tokens(out.logits), drafts, count, u)
                 : verify_chain(rule, target_probs(out.logits, d.params_), torch::stack(q_heads, 1), drafts, count, u);
      const auto kept = rows.commit_chain_on_device(drafts, verdict, count, W);  // no bonus past the row's end
      // Block entries j < kept hold cells n - 1 + j (n as the iteration began), whose contexts are all committed:
      // their outputs are the states of cells n + j.
      const auto block_index = torch::arange(K + 1, i64).view({1, K + 1});
      const auto cols = (n_streams + block_index).clamp_max(N).unsqueeze(-1).expand({R, K + 1, D});
      const auto fresh = block_index.lt(kept.repeat({R / B}).view({R, 1})).unsqueeze(-1);
      states.scatter_(1, cols, torch::where(fresh, out.hidden, states.gather(1, cols)));
      cache.advance(kept);
    };
    loop.device_half({K, cache.bucket_for(K + 1)}, iteration);
    return int64_t(1);  // the horizontal heads: one drafter forward
  });
}

// ---- later rows: the first row's last token committed, then vertical drafts, rounds of verify-and-correct and
// commits, kv rows at a time. A block's work is fixed by its first row: the host plans its rounds and counts its
// forwards, the device runs it without a read (on a GPU one CUDA graph per block, keyed by its row and the
// cache's lengths), and the drafts' own acceptance, counted on the device, is read once at the end.
void SsdDecoder::Run::later_rows() {
  auto& clock = loop.clock();
  const auto all = all_rows(B);
  clock.restart();
  const auto last = commit(W - 1, 1);  // the first row's last token
  next_logits = d.graphs_.state(rows, "ssd_next_logits", {B, V}, last.options());
  next_logits.copy_(last);
  {
    IterationTimes times;
    times.verify = clock.lap();
    charge_iteration(clock, rows, all, times, 0);
  }
  first_round_kept = d.graphs_.state(rows, "ssd_first_round_kept", {B}, i64);
  const auto& ssd = d.ssd_;
  const bool timed = !d.graphs_.replays(device);  // a replayed block's phases are not timed apart
  for (int64_t y = 1; y < H;) {
    const int64_t drafted = std::min(ssd.kv, H - y);
    Plan plan{{y, drafted == 1 && ssd.kv == 1 ? ssd.r : ssd.b}};  // before each commit but the last
    for (int64_t k = 1; k < drafted; ++k) plan.emplace_back(y + k, ssd.i);
    std::vector<std::pair<Lap, double SampleStats::*>> laps;  // the phases, where timed
    const Mark mark = [&](double SampleStats::*phase) {
      if (timed) laps.emplace_back(clock.lap(), phase);
    };
    clock.restart();
    StepKey key{B, y, int64_t(request.seed)};  // with the lengths, every forward's bucket
    auto after = cache.lengths();              // the block commits `drafted` image rows, known here
    for (int64_t row = 0; row < cache.batch(); ++row) {
      key.push_back(after[size_t(row)]);
      after[size_t(row)] += drafted * W;
    }
    d.graphs_.run(rows, key, pooled, {&cache}, [&] { block(y, drafted, plan, mark); }, {after});
    // What the block did, from its plan: one drafting, its rounds and commits; the first round's cells drafted.
    int64_t rounds = 0, first_round_cells = 0;
    for (const auto& [from, n] : plan) {
      if (rounds == 0 && n > 0) first_round_cells = (y + drafted - from) * W;
      rounds += n;
    }
    for (auto& s : rows.stats) {
      s.drafted += first_round_cells;
      s.draft_forwards += 1;
      s.target_forwards += rounds + drafted;
      s.batch_iterations += 1;  // every row takes part in every block
    }
    if (timed) {
      for (const auto& [l, phase] : laps) clock.charge(l, all, phase);
    } else {
      clock.charge(clock.lap(), all, &SampleStats::verify_ms);
    }
    y += drafted;
  }
  const auto kept = read_to_host(first_round_kept);
  const auto k = kept.accessor<int64_t, 1>();
  for (int64_t b = 0; b < B; ++b) rows.stats[size_t(b)].accepted += k[b];
}

void SsdDecoder::Run::block(int64_t y, int64_t drafted, const Plan& plan, const Mark& mark) {
  // Draft rows y .. y + drafted - 1 from row y - 1: q [B, drafted W, V].
  const auto src_tokens = rows.tokens.narrow(1, (y - 1) * W, W);
  const auto src_states = states.narrow(1, (y - 1) * W, W);
  std::vector<torch::Tensor> qs;
  for (int64_t k = 0; k < drafted; ++k) {
    const auto cells = torch::arange((y + k) * W, (y + k + 1) * W, i64).unsqueeze(0).expand({B, W});
    auto [q, x] = draft(d.heads_->horizontal_count() + k, src_states, src_tokens, cells);
    rows.tokens.narrow(1, (y + k) * W, W).copy_(x);
    if (q.defined()) qs.push_back(q);
  }
  auto q = greedy ? torch::Tensor() : torch::cat(qs, 1);
  mark(&SampleStats::draft_ms);

  int64_t round_index = 0;
  verify_rounds(plan[0].first, y + drafted, plan[0].second, q, round_index, mark);
  for (int64_t k = 0; k < drafted; ++k) {
    next_logits.copy_(commit((y + k) * W, W));
    mark(&SampleStats::verify_ms);
    if (k + 1 < drafted) {
      auto rest = greedy ? torch::Tensor() : q.narrow(1, (k + 1) * W, (drafted - k - 1) * W).contiguous();
      verify_rounds(plan[size_t(k + 1)].first, y + drafted, plan[size_t(k + 1)].second, rest, round_index, mark);
      if (!greedy) q = torch::cat({q.narrow(1, 0, (k + 1) * W), rest}, 1);
    }
  }
}

void SsdDecoder::Run::verify_rounds(int64_t from, int64_t end, int64_t rounds, torch::Tensor& q_rows,
                                    int64_t& round_index, const Mark& mark) {
  const int64_t first = from * W, T = (end - from) * W;
  const auto pos = torch::arange(first, first + T, i64).unsqueeze(0).expand({B, T}).contiguous();
  for (int64_t j = 0; j < rounds; ++j, ++round_index) {
    auto x = rows.tokens.narrow(1, first, T);
    const auto out = d.target_.decode_block(cache, x, pos, causal_mask(T, device));
    // The logits of cell first + m: next_logits for m = 0, else this forward's output at m - 1.
    const auto logits = torch::cat({next_logits.unsqueeze(1), out.logits.narrow(1, 0, T - 1)}, 1);
    mark(&SampleStats::verify_ms);
    CellVerdict verdict;
    if (greedy) {  // one-hot p and q: every cell becomes the target's argmax, kept where it already was
      verdict.tokens = greedy_tokens(logits);
      verdict.kept = verdict.tokens.eq(x);
    } else {
      const auto p = target_probs(logits, d.params_);
      verdict = verify_cells(d.cell_rule_, p, q_rows, x, rows.uniforms(pos, Purpose::kAccept, round_index),
                             rows.uniforms(pos, Purpose::kResample, round_index));
      q_rows = p;  // every cell is now a draw from this round's p
    }
    if (round_index == 0) first_round_kept.add_(verdict.kept.sum(1));  // r = 0 verifies none
    x.copy_(verdict.tokens);
    mark(&SampleStats::resample_ms);
  }
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
