// MuLo-SD, the MuLo-SD paper's Algorithm 1 (docs/algorithms.md "MuLo-SD"). Each iteration covers one span of
// L = 2 * rows * W high-res tokens (whole rows), every sample of the batch on the same span; the step numbers
// are the paper's (its Fig. 2 and Fig. 7):
//
//   7 down-sample  D_2 maps the final high-res rows to low-res rows (row-causal, so a row once down-sampled
//                  never changes); the drafter reads the new ones in one forward
//   1 draft        the low-res drafter samples the span's `rows` low-res rows token by token (its own CFG and
//                  sampling chain), then drops them from its cache: its next prefix comes from D_2
//   2 up-sample    U_2 maps them, with the low-res rows above, to 2 * rows high-res rows: the drafts x~
//   3 verify       ONE target forward over [final tokens not yet in its cache, x~_1 .. x~_{L-1}] gives p_t at
//                  every drafted position t, each conditioned on the drafts before it
//   4 accept       x~_t iff the target mass pooled over A_{k,delta}(x~_t) reaches tau (Eq. 5; A is LANTERN's
//                  neighbourhood: x~_t and its nearest codes while their mass stays within delta)
//   5 expand       R_X: the (2l + 1)^2 windows around the rejections, never before the first one t0 (Eq. 6-7)
//   6 resample     every position u of R_X in raster order from the target given the final tokens before u:
//                  t0 straight from step 3 (its prefix is final), each later u after one forward of the final
//                  tokens since the previous one
// The target cache keeps the final prefix up to the first position that changed; the rest is fed again by the
// next forward. Tokens stay on the device; the host reads the verdicts once per span and schedules the rest. Not
// lossless: drafts after t0 outside R_X keep a context that was resampled, and tau accepts tokens the target finds
// unlikely. tau > 1 rejects everything and the decoder is AR (the tests check both ends: tau > 1 gives AR's tokens, tau
// = 0 keeps every draft). Randomness per (seed, sample id, position): kDraft at low-res positions for the drafter;
// kSample, AR's key, at resampled positions.
#include "decoding/mulo_sd.h"

#include <algorithm>
#include <set>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/acceptance.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/iteration_stats.h"
#include "decoding/common/sampler.h"
#include "decoding/common/decoder_registry.h"

namespace vispec {

std::vector<int64_t> local_expansion(const std::vector<int64_t>& rejected, int64_t width, int64_t radius,
                                     int64_t span_begin, int64_t span_end) {
  if (rejected.empty()) return {};
  const int64_t t0 = *std::min_element(rejected.begin(), rejected.end());
  std::set<int64_t> cells;
  for (int64_t t : rejected) {
    const int64_t row = t / width, col = t % width;
    for (int64_t r = row - radius; r <= row + radius; ++r)
      for (int64_t c = std::max<int64_t>(0, col - radius); c <= std::min(width - 1, col + radius); ++c) {
        const int64_t u = r * width + c;
        if (r >= 0 && u >= t0 && u >= span_begin && u < span_end) cells.insert(u);
      }
  }
  return {cells.begin(), cells.end()};
}

namespace {

// One forward of per-row blocks of different lengths: row b feeds tokens[b][from[b] .. from[b] + len[b]) at
// those positions, padded at the end to the longest with token 0 (a causal mask keeps the padding out of every
// real query's view). tokens [B, N] on the model's device; the schedule (from, len) is the host's, so nothing
// is read back. Returns the guided logits [B, T, V]; the caller keeps what it needs of each row's block.
torch::Tensor ragged_forward(CfgModel& model, KvCache& cache, const torch::Tensor& tokens,
                             const std::vector<int64_t>& from, const std::vector<int64_t>& len, int64_t max_position) {
  const int64_t B = tokens.size(0), T = std::max<int64_t>(1, *std::max_element(len.begin(), len.end()));
  auto host = torch::empty({2, B, T}, torch::kInt64);  // positions, and 1 where a row's block is real
  auto h = host.accessor<int64_t, 3>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) {
      h[0][b][i] = std::min(max_position, from[size_t(b)] + i);
      h[1][b][i] = i < len[size_t(b)] ? 1 : 0;
    }
  const auto device = tokens.device();
  const auto in = host.to(device);
  const auto block = tokens.gather(1, in[0]) * in[1];
  return model.decode_block(cache, block, in[0], causal_mask(T, device)).logits;
}

// Each row's vector at one block entry: x [B, T, V] at entry[b] -> [B, V].
torch::Tensor row_entries(const torch::Tensor& x, const std::vector<int64_t>& entry) {
  const auto at = torch::tensor(entry, torch::kInt64).to(x.device());
  const int64_t B = x.size(0), V = x.size(2);
  return x.gather(1, at.view({B, 1, 1}).expand({B, 1, V})).squeeze(1);
}

// tokens[b][cell[b]] = value[b] where write[b]; other rows keep theirs (one scatter, no read).
void write_cells(torch::Tensor& tokens, const std::vector<int64_t>& cell, const std::vector<char>& write,
                 const torch::Tensor& value) {
  const auto device = tokens.device();
  const auto at = torch::tensor(cell, torch::kInt64).to(device).view({-1, 1});
  const auto mask =
      torch::tensor(std::vector<int64_t>(write.begin(), write.end()), torch::kInt64).to(device).view({-1, 1});
  tokens.scatter_(1, at, torch::where(mask.ne(0), value.view({-1, 1}), tokens.gather(1, at)));
}
}  // namespace

MuloSdDecoder::MuloSdDecoder(Gpt target, Gpt drafter, MuloResamplers resamplers, VqModel vq, SamplingParams params,
                             MuloParams mulo, std::shared_ptr<const CodebookNeighbours> neighbours)
    : target_(std::move(target), params.cfg_scale), drafter_(std::move(drafter), params.cfg_scale),
      resamplers_(std::move(resamplers)), vq_(std::move(vq)), params_(params), mulo_(mulo),
      neighbours_(std::move(neighbours)) {
  VISPEC_ASSERT(neighbours_ && neighbours_->columns() >= 1, "MuLo-SD needs the codebook neighbour table");
  VISPEC_ASSERT(2 * drafter_.gpt()->config().grid_size == target_.gpt()->config().grid_size,
                "MuLo-SD's drafter works on half the target's grid");
  mulo_.k = std::min(mulo_.k, neighbours_->columns());
  neighbour_table_ = neighbours_->tensor(target_.gpt()->device());
}

// One decode: its state, and the paper's steps as methods. The tokens live on the device: final high-res tokens,
// then the span's drafts; the low-res grid, D_2's rows above the span and the drafts in it. The host holds the
// schedule (what each row has fed, which positions it resamples) and reads the verdicts once per span; the tokens
// come back once, at the end. Both grids, and the drafter's newest logits, are state of the decode in
// IterationGraphs' buffers: a span's drafting is replayed as one graph that finds them where it was captured.
struct MuloSdDecoder::Run {
  Run(MuloSdDecoder& decoder, const DecodeRequest& request);
  // Both models read the conditions; the target's p at position 0 is kept for the first span's verification.
  void prefill();
  // One iteration, every row on the span of high-res positions n .. end - 1; returns end.
  int64_t span(int64_t n);

  // 7 down-sample, 1 draft, 2 up-sample: the span's drafts into tokens [n, end). Returns the drafter forwards.
  int64_t draft(int64_t n, int64_t end, IterationTimes& times, Lap& down_lap, Lap& up_lap);
  // 3 verify: p at every drafted position, [B, end - n, V].
  torch::Tensor verify(int64_t n, int64_t end);
  // 4 accept, 5 expand: each row's R_X (ascending); the target cache keeps each row's final prefix before it.
  std::vector<std::vector<int64_t>> accept(int64_t n, int64_t end, const torch::Tensor& P);
  // 6 resample R_X in raster order.
  void resample(int64_t n, const torch::Tensor& P, const std::vector<std::vector<int64_t>>& expanded);

  MuloSdDecoder& d;
  const DecodeRequest& request;
  const int64_t B, W, N, Wl, L;  // L: the high-res tokens of a span (2 * rows image rows)
  const torch::Device device;
  const torch::TensorOptions i64;
  DecodeState rows;
  PhaseClock clock;
  KvCache tcache, dcache;
  torch::Tensor low;         // [B, Wl * Wl] the low-res grid
  torch::Tensor q_logits;    // [B, V] the drafter's newest guided logits
  torch::Tensor p_first;     // [B, V] the target's p at position 0
  torch::Tensor one;         // a drafter step's block mask
  std::vector<int64_t> fed;  // final tokens in each row's target cache
  int64_t low_fed = 0;       // low-res tokens in the drafter's cache (every row)
};

DecodeResult MuloSdDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  Run run(*this, request);
  run.prefill();
  for (int64_t n = 0; n < run.N;) n = run.span(n);
  auto result = run.rows.result();  // its read waits for the device, so settling the clock then does not
  run.clock.settle(result.stats);
  return result;
}

MuloSdDecoder::Run::Run(MuloSdDecoder& decoder, const DecodeRequest& request)
    : d(decoder), request(request), B(request.batch()), W(decoder.target_.gpt()->config().grid_size), N(W * W),
      Wl(decoder.drafter_.gpt()->config().grid_size), L(std::min(2 * decoder.mulo_.rows, W) * W),
      device(decoder.target_.gpt()->device()), i64(torch::TensorOptions().dtype(torch::kInt64).device(device)),
      rows(decoder.graphs_.rows(request, N, 0, device)), clock(device),
      tcache(decoder.target_.make_cache(B, 2 * L, /*static_steps=*/true)),
      dcache(decoder.drafter_.make_cache(B, 0, /*static_steps=*/true)),
      low(decoder.graphs_.state(rows, "mulo_low", {B, Wl * Wl}, i64)),
      one(torch::ones({1, 1}, i64.dtype(torch::kBool))), fed(static_cast<size_t>(B), 0) {}

void MuloSdDecoder::Run::prefill() {
  p_first = target_probs(d.target_.prefill(tcache, request.conditions).logits.select(1, -1), d.params_);
  tcache.advance();
  const auto prefilled = d.drafter_.prefill(dcache, request.drafter_conditions_or_target()).logits.select(1, -1);
  q_logits = d.graphs_.state(rows, "mulo_q_logits", prefilled.sizes(), prefilled.options());
  q_logits.copy_(prefilled);
  dcache.advance();
  for (auto& s : rows.stats) s.target_forwards = s.draft_forwards = 1;
  clock.charge(clock.lap(), all_rows(B), &SampleStats::bookkeeping_ms);
}

int64_t MuloSdDecoder::Run::span(int64_t n) {
  const int64_t end = std::min(n + L, N);
  auto times = IterationTimes::start(clock, d.graphs_.replays(device));
  Lap down_lap, up_lap, accept_lap;  // MuLo-SD's own phases, reported beside the four
  const int64_t draft_forwards = draft(n, end, times, down_lap, up_lap);
  const auto P = verify(n, end);
  times.verify = clock.lap();
  const auto expanded = accept(n, end, P);
  accept_lap = clock.lap();
  resample(n, P, expanded);
  times.resample = clock.lap();

  const auto all = all_rows(B);
  charge_iteration(clock, rows, all, times, draft_forwards);
  for (auto& s : rows.stats) s.batch_iterations += 1;  // every row takes part in every span
  clock.charge(up_lap, all, "upsample_ms");
  clock.charge(accept_lap, all, "accept_ms");
  clock.charge(down_lap, all, "downsample_ms");  // none in the first span: charged 0
  return end;
}

int64_t MuloSdDecoder::Run::draft(int64_t n, int64_t end, IterationTimes& times, Lap& down_lap, Lap& up_lap) {
  const int64_t span = end - n, low_begin = n / (2 * W) * Wl, low_count = span / (2 * W) * Wl;
  // Their shapes and the drafter's lengths follow from the span alone: one graph per span, read by nothing.
  const int64_t drafter_committed = dcache.length(0) + (low_begin - low_fed);
  const auto body = [&] {
    // ---- 7 down-sample the rows the last span finished; the drafter reads them
    if (n > 0) {
      auto high = d.vq_->code_vectors(rows.tokens.narrow(1, 0, n), n / W, W);
      const auto latent = d.resamplers_->down(high);
      nonfinite_watch::note(latent, nonfinite_watch::Source::kResamplers);  // the search would make NaN code 0
      const auto down = d.vq_->nearest(latent).second;                      // [B, low_begin]
      const int64_t T = low_begin - low_fed;
      low.narrow(1, low_fed, T).copy_(down.narrow(1, low_fed, T));
      times.end(down_lap, clock);
      auto pos = torch::arange(low_fed, low_begin, i64).expand({B, T});
      q_logits.copy_(
          d.drafter_.decode_block(dcache, low.narrow(1, low_fed, T), pos, causal_mask(T, device)).logits.select(1, -1));
      dcache.advance();
    }
    // ---- 1 draft the span's low-res rows token by token
    const auto du = rows.uniforms(  // every low-res position's uniforms, [B, low_count]
        torch::arange(low_begin, low_begin + low_count, i64).view({1, low_count}).expand({B, low_count}),
        Purpose::kDraft);
    for (int64_t j = 0; j < low_count; ++j) {
      const int64_t at = low_begin + j;
      const auto y = probs_and_draw(q_logits, d.params_, du.select(1, j)).second;
      low.select(1, at).copy_(y);
      if (j + 1 == low_count) break;
      auto pos = torch::full({B, 1}, at, i64);
      q_logits.copy_(d.drafter_.decode_block(dcache, y.view({B, 1}), pos, one).logits.select(1, 0));
      dcache.advance();
    }
    // The drafts leave the drafter's cache: its next prefix comes from D_2.
    dcache.advance(torch::full({B}, drafter_committed - dcache.length(0), i64));
    times.end(times.draft, clock);

    // ---- 2 up-sample them, with the low-res rows above, to the span's high-res drafts
    const int64_t low_rows = (low_begin + low_count) / Wl;
    auto up = d.resamplers_->up(d.vq_->code_vectors(low.narrow(1, 0, low_rows * Wl), low_rows, Wl));
    nonfinite_watch::note(up, nonfinite_watch::Source::kResamplers);
    rows.tokens.narrow(1, n, span)
        .copy_(d.vq_->nearest(up.narrow(2, 2 * (low_begin / Wl), span / W).contiguous()).second);
    times.end(up_lap, clock);
  };
  // The span ends with the drafter's cache at drafter_committed entries in every row, known here.
  d.graphs_.run(rows, {B, n, dcache.length(0), int64_t(request.seed)}, {d.drafter_.pooled_lengths(dcache)}, {&dcache},
                body, {std::vector<int64_t>(size_t(dcache.batch()), drafter_committed)});
  int64_t forwards = low_count - 1;
  if (n > 0) {
    low_fed = low_begin;
    ++forwards;
  }
  if (!times.timed) times.draft = clock.lap();  // a replayed span's drafting, re-sampling included, timed whole
  return forwards;
}

torch::Tensor MuloSdDecoder::Run::verify(int64_t n, int64_t end) {
  // One target forward; p_t at drafted position n + t is output n + t - 1 - fed (the prefill's for position 0,
  // where every row has fed nothing).
  const int64_t span = end - n;
  std::vector<int64_t> len(static_cast<size_t>(B)), start(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    len[size_t(b)] = end - 1 - fed[size_t(b)];
    start[size_t(b)] = n == 0 ? 0 : n - 1 - fed[size_t(b)];
  }
  auto p = target_probs(ragged_forward(d.target_, tcache, rows.tokens, fed, len, N - 1), d.params_);
  if (n == 0) p = torch::cat({p_first.unsqueeze(1), p}, 1);
  const auto first = torch::tensor(start, torch::kInt64).to(device).view({B, 1});
  return p.gather(1, (first + torch::arange(span, i64).view({1, span})).unsqueeze(2).expand({B, span, p.size(2)}));
}

std::vector<std::vector<int64_t>> MuloSdDecoder::Run::accept(int64_t n, int64_t end, const torch::Tensor& P) {
  // ---- 4 accept by pooled mass (every row and position at once, one read of the verdicts), 5 expand the
  // rejections
  const int64_t span = end - n;
  const auto x = rows.tokens.narrow(1, n, span).reshape(-1);
  const auto& mulo = d.mulo_;
  const auto pooled = relaxed_masses(P.reshape({B * span, -1}), x, d.neighbour_table_.index_select(0, x), mulo.k,
                                     torch::full({B * span}, mulo.delta, P.options().dtype(torch::kFloat64)))
                          .p_tilde;
  const auto kept = read_to_host(pooled.ge(mulo.tau).view({B, span}));
  const auto ka = kept.accessor<bool, 2>();
  std::vector<std::vector<int64_t>> expanded(static_cast<size_t>(B));
  std::vector<int64_t> kept_now(static_cast<size_t>(B));  // block entries each row keeps: its final prefix
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> rejected;
    for (int64_t i = 0; i < span; ++i)
      if (!ka[b][i]) rejected.push_back(n + i);
    auto& rx = expanded[size_t(b)];
    rx = local_expansion(rejected, W, mulo.radius, n, end);
    const int64_t valid = rx.empty() ? end - 1 : rx.front();
    kept_now[size_t(b)] = valid - fed[size_t(b)];
    fed[size_t(b)] = valid;
    auto& s = rows.stats[size_t(b)];
    s.drafted += span;
    s.accepted += span - int64_t(rx.size());
    s.extra["rejected"] += double(rejected.size());
    s.extra["expanded"] += double(rx.size());
  }
  tcache.advance(kept_now);  // lengths only: the entries are already in place
  return expanded;
}

void MuloSdDecoder::Run::resample(int64_t n, const torch::Tensor& P,
                                  const std::vector<std::vector<int64_t>>& expanded) {
  // t0 from step 3, then one forward per position, every row at once
  const auto key = [&](int64_t b) { return RngKey{request.seed, request.sample_ids[size_t(b)]}; };
  std::vector<size_t> next(static_cast<size_t>(B), 0);
  {
    std::vector<int64_t> cell(static_cast<size_t>(B), n), entry(static_cast<size_t>(B), 0);
    std::vector<char> write(static_cast<size_t>(B), 0);
    auto u = torch::zeros({B}, torch::kFloat64);
    auto ua = u.accessor<double, 1>();  // (u[b] = ... would be two ATen ops per row)
    for (int64_t b = 0; b < B; ++b)
      if (!expanded[size_t(b)].empty()) {
        cell[size_t(b)] = expanded[size_t(b)][0];
        entry[size_t(b)] = cell[size_t(b)] - n;
        write[size_t(b)] = 1;
        ua[b] = uniform(key(b), uint32_t(cell[size_t(b)]), Purpose::kSample);
        next[size_t(b)] = 1;
      }
    write_cells(rows.tokens, cell, write, sample_from_probs(row_entries(P, entry), u));
  }
  for (;;) {
    std::vector<int64_t> ahead(static_cast<size_t>(B), 0);  // tokens each row feeds before its next position
    bool any = false;
    for (int64_t b = 0; b < B; ++b)
      if (next[size_t(b)] < expanded[size_t(b)].size()) {
        ahead[size_t(b)] = expanded[size_t(b)][next[size_t(b)]] - fed[size_t(b)];
        any = true;
      }
    if (!any) break;
    auto logits = ragged_forward(d.target_, tcache, rows.tokens, fed, ahead, N - 1);
    std::vector<int64_t> cell(static_cast<size_t>(B), 0), entry(static_cast<size_t>(B), 0);
    std::vector<char> write(static_cast<size_t>(B), 0);
    auto u = torch::zeros({B}, torch::kFloat64);
    auto ua = u.accessor<double, 1>();
    for (int64_t b = 0; b < B; ++b) {
      if (ahead[size_t(b)] == 0) continue;
      const int64_t at = expanded[size_t(b)][next[size_t(b)]++];
      fed[size_t(b)] = at;
      cell[size_t(b)] = at;
      entry[size_t(b)] = ahead[size_t(b)] - 1;
      write[size_t(b)] = 1;
      ua[b] = uniform(key(b), uint32_t(at), Purpose::kSample);
      ++rows.stats[size_t(b)].target_forwards;
    }
    tcache.advance(ahead);  // each row keeps what it fed before its position
    write_cells(rows.tokens, cell, write, sample_from_probs(target_probs(row_entries(logits, entry), d.params_), u));
  }
}

namespace {
DecoderEntry mulo_sd_entry() {
  DecoderEntry e;
  e.name = "mulo_sd";
  e.summary = "MuLo-SD: a half-resolution GPT drafts, resamplers lift its rows, pooled-mass verification";
  e.drafters = {"mulo"};
  e.read = [](DecoderFields& f, DecoderConfig& c) {
    MuloParams p;
    p.tau = f.number("tau", p.tau);
    f.require(p.tau >= 0, "tau", "must be >= 0 (above 1 rejects every draft)");
    p.k = f.whole("k", p.k, 1, int64_t(1) << 20);
    p.delta = f.number("delta", p.delta);
    f.require(p.delta >= 0 && p.delta <= 1, "delta", "must be in [0, 1]");
    p.radius = f.whole("radius", p.radius, 0, 64);
    p.rows = f.whole("rows", p.rows, 1, 64);
    c.method = p;
    c.neighbours = p.k;  // A_{k,delta}: verification pools the target's mass over a draft's neighbours
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    return std::make_unique<MuloSdDecoder>(m.target, m.mulo_gpt, m.mulo_resamplers, m.vq, c.sampling,
                                           c.settings<MuloParams>(), m.neighbours);
  };
  return e;
}
const DecoderRegistration kMuloSdRegistration(mulo_sd_entry());
}  // namespace

}  // namespace vispec
