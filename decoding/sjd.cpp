// Speculative Jacobi decoding, probabilistic form (docs/algorithms.md "SJD"):
//
//   token 0 is sampled from the prefill, as AR; then per iteration and row:
//   window   [newest, d_1 .. d_w]: the carried drafts of the last iteration (each with the distribution q
//            it was sampled from), then new drafts drawn uniformly from the codebook (q one-hot on them)
//   forward  ONE target pass over the window gives p_0 .. p_w (p_j: the distribution after window[j])
//   verify   the chain rule (decoding/common/verify) left to right: d_i against p_{i-1} and q_i; at the first
//            rejection the rule's rejection sample (exact: norm(max(0, p - q))); all accepted: a bonus from p_w
//   carry    the outputs after the new token were computed from a context with rejected drafts in it; their
//            samples y_j ~ p_j become the next drafts with q = p_j (the Jacobi update)
//   keep     newest + the accepted drafts in the cache; the new token is the next newest
// Lossless with the exact rule: every draft is a sample of its q, so this is speculative sampling with a
// changing drafter. Any rule of decoding/common/acceptance.h applies (the job's `accept`). All rows at once; one
// read of the accepted counts per iteration; a row whose image is done takes the unit's next sample
// (decoding/common/decode_state.h, continuous batching).
// SCD (Speculative Coupled Decoding, `scd`) changes the carry alone: a carried draft is still a sample of p_j,
// stored with q = p_j, but coupled to the draft it replaces (decoding/common/coupling.h): `maximal` keeps the old
// draft where u q_j(d) < p_j(d) and draws the residual norm(max(0, p_j - q_j)) elsewhere; `gumbel` takes
// argmax log p_j + g with the position's own Gumbel noise g, fixed until the position is committed. Both keep the
// marginal p_j, so verification stays exact (the released SCD code that stores the old q for a kept draft does
// not; this stores p_j for every carried draft). At temperature 0 SCD is SJD.
// Randomness per (seed, sample id, position): kInit (draw = the sample's iteration) for new drafts, kDraft (draw
// = the sample's iteration) for carried samples (SCD's residual draws), kCouple (the same draw) for maximal
// coupling's tests, kNoise (draw = the token) for a position's Gumbel noise, kAccept for tests, kResample after a
// rejection, kSample for token 0 and bonus tokens.
#include "decoding/sjd.h"

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/coupling.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/iteration_loop.h"
#include "decoding/gsd.h"

namespace vispec {

Coupling parse_coupling(const std::string& word) {
  if (word == "maximal") return Coupling::kMaximal;
  if (word == "gumbel") return Coupling::kGumbel;
  VISPEC_FAIL("unknown coupling '", word, "' (maximal, gumbel)");
}

SjdDecoder::SjdDecoder(Gpt target, SamplingParams params, int64_t window, AcceptanceParams accept,
                       std::shared_ptr<const CodebookNeighbours> neighbours, Coupling coupling)
    : target_(std::move(target), params.cfg_scale), params_(params), window_(window),
      rule_(chain_rule(accept, neighbours.get(), window, target_.gpt()->device())), coupling_(coupling) {
  // Inputs of every iteration: made once, so that a replayed iteration finds them.
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(target_.gpt()->device());
  const int64_t W = window_, V = target_.gpt()->config().vocab_size;
  column_ = torch::arange(W, i64).view({1, W});
  window_mask_ = causal_mask(W + 1, i64.device());
  if (coupling_ == Coupling::kGumbel) token_draws_ = torch::arange(V, i64).repeat({W + 1}).view({1, (W + 1) * V});
  if (accept.rule == AcceptRule::kGsd && accept.distance > 0) {  // GSD's filter: the image tokens' input embeddings
    torch::NoGradGuard no_grad;
    auto gpt = target_.gpt();  // (a holder: embed_image is not const)
    const auto codes = torch::arange(gpt->config().vocab_size, torch::dtype(torch::kInt64).device(gpt->device()));
    rule_.embeddings = gpt->embed_image(codes).to(torch::kFloat32);
  }
}

std::string SjdDecoder::name() const {
  if (rule_.params.rule == AcceptRule::kGsd) return "gsd";
  return coupling_ == Coupling::kJacobi ? "sjd" : "scd";
}

// SCD: y_j (j < W) coupled to the draft d_{j+1} it replaces at its position, whose q was q_j; every carried
// draft stored with its marginal p_j (SJD: y as drawn).
std::pair<torch::Tensor, torch::Tensor> SjdDecoder::couple(DecodeState& rows, const DecodeState::Span& cells,
                                                           const torch::Tensor& row_iteration,
                                                           const torch::Tensor& drafts, const torch::Tensor& q,
                                                           const torch::Tensor& p, const torch::Tensor& y,
                                                           const torch::Tensor& u_carry) const {
  const int64_t B = p.size(0), W = window_, V = p.size(2);
  if (coupling_ == Coupling::kMaximal || coupling_ == Coupling::kMaximalKeepsOldQ) {
    const auto u_keep = rows.uniforms(cells.at(0, W), Purpose::kCouple, row_iteration);
    const auto coupled = maximal_coupling(drafts, q, p.narrow(1, 0, W), u_keep, u_carry.narrow(1, 0, W));
    auto carried = torch::cat({coupled, y.narrow(1, W, 1)}, 1);
    if (coupling_ == Coupling::kMaximalKeepsOldQ) {       // a kept draft keeps its old q: biased, for comparison
      const auto kept = coupled.eq(drafts).unsqueeze(2);  // a residual draw never equals the old draft
      return {carried, torch::cat({torch::where(kept, q, p.narrow(1, 0, W)), p.narrow(1, W, 1)}, 1)};
    }
    return {carried, p};
  }
  if (coupling_ == Coupling::kGumbel) {
    // Each position's noise, one uniform per token: [B, (W + 1) V] positions, the token as the draw.
    const auto at = cells.at(0, W + 1).unsqueeze(2).expand({B, W + 1, V}).reshape({B, (W + 1) * V});
    const auto noise = rows.uniforms(at, Purpose::kNoise, token_draws_).view({B, W + 1, V});
    return {gumbel_coupling(p, noise), p};
  }
  return {y, p};
}

DecodeResult SjdDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  const int64_t N = target_.gpt()->config().image_tokens();
  const int64_t V = target_.gpt()->config().vocab_size, W = window_;
  const auto device = target_.gpt()->device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  auto rows = graphs_.rows(request, N, W + 1, device);
  const int64_t B = rows.batch();

  auto cache = target_.make_cache(B, W + 1, /*static_steps=*/true);
  // The carried drafts of every row, [B, W], their q [B, W, V] (sampling only) and how many there are [B]:
  // state of the decode that each iteration rewrites in place. (Zeros where nothing is carried: every iteration
  // then issues the same operators.)
  const auto carry = graphs_.state(rows, "carry", {B, W}, i64), carry_len = graphs_.state(rows, "carry_len", {B}, i64);
  const auto carry_q =
      params_.greedy() ? torch::Tensor() : graphs_.state(rows, "carry_q", {B, W, V}, i64.dtype(torch::kFloat32));
  const auto row_iteration = rows.iteration.view({B, 1});  // each row's draws keyed by its sample's iterations
  const bool gsd = rule_.params.rule == AcceptRule::kGsd && !params_.greedy();  // (at T = 0 GSD is SJD)
  const auto figures = gsd ? graphs_.state(rows, "gsd", {B, 2}, i64.dtype(torch::kFloat64)) : torch::Tensor();
  if (gsd) rows.keep_figures(figures, gsd_figure_names());
  IterationLoop loop(graphs_, rows, request, {&cache}, {target_.pooled_lengths(cache)}, IterationLoop::Commit::kChain);

  // ---- first: rows taking samples (every row at the start, then each row whose image is done) prefill with
  // their conditions, token 0 is sampled as AR samples it, and nothing is carried yet.
  const auto start = [&](const RowFill& fill) {
    rows.start(fill, target_.prefill_rows(cache, fill.rows, fill.conditions).logits, params_);
    const auto index = torch::tensor(fill.rows, torch::kInt64).to(device);
    for (const auto& t : {carry, carry_len, carry_q})
      if (t.defined()) t.index_fill_(0, index, 0);
    for (int64_t b : fill.rows) rows.stats_of(b).target_forwards = 1;
  };
  loop.run(start, [&](const std::vector<int64_t>&) {
    // The iteration on the device: window, verify, accept, carry, commit. Nothing in it reads the host.
    const auto iteration = [&] {
      // ---- the window of every row: newest, carried drafts, new uniform drafts. Every cell the iteration reads,
      // once: the newest (offset -1), the window's and the one after it.
      const auto cells = rows.span(-1, W + 2);
      const auto u_init = rows.uniforms(cells.at(0, W), Purpose::kInit, row_iteration);
      const auto fresh = (u_init * double(V)).to(torch::kInt64).clamp_max(V - 1);
      const auto carried = column_ < carry_len.view({B, 1});
      const auto drafts = torch::where(carried, carry, fresh);
      loop.end_draft();

      // ---- one target forward over every window, then the chain rule
      const auto out =
          target_.decode_block(cache, torch::cat({rows.tokens_at(-1), drafts}, 1), cells.at(-1, W + 1), window_mask_);
      loop.end_verify();
      const auto count = (N - rows.n).clamp(0, W);
      const auto u = chain_uniforms(rows, W, rule_, params_.greedy(), cells.at(0, W + 1));
      // The Jacobi update reads y_j, a sample of p_j at n + j (the argmax at temperature 0).
      torch::Tensor y, p, q_carried;  // q_carried: each y_j's stored q, its marginal p_j
      ChainVerdict verdict;
      if (params_.greedy()) {
        y = greedy_tokens(out.logits);  // [B, W + 1]
        verdict = verify_chain_greedy(rule_, y, drafts, count, u);
      } else {
        // p [B, W + 1, V], and y its samples with the iteration's own uniforms.
        const auto u_carry = rows.uniforms(cells.at(0, W + 1), Purpose::kDraft, row_iteration);
        std::tie(p, y) = probs_and_draw(out.logits, params_, u_carry);
        auto one_hot = torch::zeros({B, W, V}, p.options()).scatter_(2, fresh.unsqueeze(2), 1.0);
        const auto q = torch::where(carried.unsqueeze(2), carry_q, one_hot);
        verdict = verify_chain(rule_, p, q, drafts, count, u);
        if (gsd) add_gsd_figures(figures, p, q, drafts, count, verdict);
        std::tie(y, q_carried) = couple(rows, cells, row_iteration, drafts, q, p, y, u_carry);
      }
      // ---- carry: y_{a+1} .. y_count (those inside the image) become the next window's drafts
      const auto from = (verdict.accepted + 1).view({B, 1}) + column_;  // [B, W]
      carry.copy_(y.gather(1, from.clamp_max(W)));
      if (p.defined()) carry_q.copy_(q_carried.gather(1, from.clamp_max(W).unsqueeze(2).expand({B, W, V})));
      carry_len.copy_((torch::minimum(count, N - rows.n - 1) - verdict.accepted).clamp_min(0));
      cache.advance(rows.commit_chain_on_device(drafts, verdict, count, N));  // newest + accepted drafts
    };
    // One forward per iteration: every iteration is steady.
    loop.device_half({W, cache.bucket_for(W + 1)}, iteration);
    return int64_t(0);
  });
  return loop.result();
}

namespace {
struct SjdSettings {
  int64_t window = 15;  // drafts verified per forward
};

DecoderEntry sjd_entry() {
  DecoderEntry e;
  e.name = "sjd";
  e.summary = "speculative Jacobi decoding: the target drafts its own window and verifies it, no drafter";
  e.read = [](DecoderFields& f, DecoderConfig& c) {
    c.method = SjdSettings{f.whole("window", SjdSettings{}.window, 1, 64)};
    read_rule(f, c, "exact");
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    return std::make_unique<SjdDecoder>(m.target, c.sampling, c.settings<SjdSettings>().window, c.accept, m.neighbours);
  };
  return e;
}
const DecoderRegistration kSjdRegistration(sjd_entry());

struct ScdSettings {
  int64_t window = 32;  // SCD's released Lumina-mGPT scripts (its paper's table: 64)
  Coupling coupling = Coupling::kMaximal;
};

DecoderEntry scd_entry() {
  DecoderEntry e;
  e.name = "scd";
  e.summary = "speculative coupled decoding: SJD whose carried drafts are coupled to the drafts they replace";
  e.read = [](DecoderFields& f, DecoderConfig& c) {
    ScdSettings s;
    s.window = f.whole("window", s.window, 1, 64);
    s.coupling = f.word<Coupling>("coupling", "maximal", parse_coupling);
    c.method = s;
    read_rule(f, c, "exact");
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    const auto& s = c.settings<ScdSettings>();
    return std::make_unique<SjdDecoder>(m.target, c.sampling, s.window, c.accept, m.neighbours, s.coupling);
  };
  return e;
}
const DecoderRegistration kScdRegistration(scd_entry());
}  // namespace

}  // namespace vispec
