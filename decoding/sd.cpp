// Speculative decoding, one iteration per row (docs/algorithms.md "SD"):
//
//   first    token 0 is sampled from the target's prefill, as AR samples it
//   draft    the drafter feeds the row's newest token, then samples x_1 .. x_gamma from its own q, feeding
//            each one (gamma + 1 drafter forwards; the last completes the drafter's cache)
//   verify   ONE target forward over [newest, x_1 .. x_gamma] gives p at the gamma + 1 positions; the chain is
//            accepted left to right by the rule, and the next token is the rule's rejection sample at the
//            first rejection or a bonus sample of p after a full accept (decoding/common/verify: all rows at once)
//   keep     target cache: the newest token + the accepted drafts; drafter cache truncated to the same; the
//            next token becomes the row's newest (fed by the next iteration)
// Every row of a batch runs its own iteration in the same forwards (rows sit at different positions; the
// cache keeps per-row lengths; a row whose image is done takes the unit's next sample, decoding/common/decode_state.h),
// and nothing loops over rows issuing kernels: one read of the accepted counts
// per iteration is the host's only wait. The iteration up to that read touches only the device, so on a GPU a
// steady one (its drafter steps within one length bucket) is replayed as one CUDA graph
// (decoding/common/iteration_graphs.h); the host then replays it and reads the counts and the caches' lengths. With the
// exact rule the output distribution is the target's (lossless); at temperature 0 the tokens are AR's greedy tokens.
// Randomness per (seed, sample id, position): kSample for token 0 and bonus tokens, kDraft for drafts,
// kAccept for the tests, kResample after a rejection.
#include "decoding/sd.h"

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/iteration_loop.h"

namespace vispec {

SdDecoder::SdDecoder(Gpt target, Gpt drafter, SamplingParams params, int64_t gamma, AcceptanceParams accept,
                     std::shared_ptr<const CodebookNeighbours> neighbours)
    : target_(std::move(target), params.cfg_scale), drafter_(std::move(drafter), params.cfg_scale), params_(params),
      gamma_(gamma), rule_(chain_rule(accept, neighbours.get(), gamma, target_.gpt()->device())) {}

DecodeResult SdDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  const int64_t N = target_.gpt()->config().image_tokens(), G = gamma_;
  const auto device = target_.gpt()->device();
  auto rows = graphs_.rows(request, N, G + 1, device);
  const int64_t B = rows.batch();
  auto tcache = target_.make_cache(B, G + 1, /*static_steps=*/true),
       dcache = drafter_.make_cache(B, G + 1, /*static_steps=*/true);
  if (!one_.defined()) {  // inputs of every iteration: made once, so that a replayed iteration finds them
    one_ = torch::ones({1, 1}, torch::TensorOptions().dtype(torch::kBool).device(device));
    chain_mask_ = causal_mask(G + 1, device);
  }
  IterationLoop loop(graphs_, rows, request, {&tcache, &dcache},
                     {target_.pooled_lengths(tcache), drafter_.pooled_lengths(dcache)}, IterationLoop::Commit::kChain);

  // ---- first: rows taking samples (every row at the start, then each row whose image is done) prefill both
  // models with their conditions, and token 0 is sampled as AR samples it.
  const auto start = [&](const RowFill& fill) {
    rows.start(fill, target_.prefill_rows(tcache, fill.rows, fill.conditions).logits, params_);
    drafter_.prefill_rows(dcache, fill.rows, fill.conditions);
    for (int64_t b : fill.rows) rows.stats_of(b).target_forwards = rows.stats_of(b).draft_forwards = 1;
  };
  loop.run(start, [&](const std::vector<int64_t>&) {
    // The iteration on the device: draft, verify, accept, commit. Nothing in it reads the host.
    const auto iteration = [&] {
      // ---- draft. Every cell the iteration reads, once: the newest (offset -1), the drafts' and the bonus's.
      const auto cells = rows.span(-1, G + 2);
      const auto newest = rows.tokens_at(-1);
      const auto u_draft = params_.greedy() ? torch::Tensor() : rows.uniforms(cells.at(0, G), Purpose::kDraft);
      auto q_logits = drafter_.decode_block(dcache, newest, cells.at(-1, 1), one_).logits.select(1, 0);
      dcache.advance();
      std::vector<torch::Tensor> drafted, q_steps;
      for (int64_t j = 0; j < G; ++j) {
        torch::Tensor x;
        if (params_.greedy()) {
          x = greedy_tokens(q_logits);
        } else {
          auto [q, token] = probs_and_draw(q_logits, params_, u_draft.select(1, j));
          q_steps.push_back(q);
          x = token;
        }
        drafted.push_back(x);
        q_logits = drafter_.decode_block(dcache, x.view({B, 1}), cells.at(j, 1), one_).logits.select(1, 0);
        dcache.advance();
      }
      const auto drafts = torch::stack(drafted, 1);  // [B, G]
      loop.end_draft();

      // ---- verify: one target forward, then the chain rule over every row
      const auto out = target_.decode_block(tcache, torch::cat({newest, drafts}, 1), cells.at(-1, G + 1), chain_mask_);
      loop.end_verify();
      const auto count = (N - rows.n).clamp(0, G);
      const auto u = chain_uniforms(rows, G, rule_, params_.greedy(), cells.at(0, G + 1));
      const auto verdict = params_.greedy() ? verify_chain_greedy(rule_, greedy_tokens(out.logits), drafts, count, u)
                                            : verify_chain(rule_, target_probs(out.logits, params_),
                                                           torch::stack(q_steps, 1), drafts, count, u);
      const auto kept = rows.commit_chain_on_device(drafts, verdict, count, N);
      // ---- keep [newest, accepted drafts] in the target's cache; the drafter, which fed all G + 1, drops the
      // rest: it keeps what the target kept, in entries rather than tokens (where image rows end in an
      // end-of-line entry, a dynamic cache, the two differ).
      tcache.advance(kept);
      dcache.advance(tcache.lengths_now() - dcache.lengths_now());
    };
    // Steady: every drafter step reads through one bucket, so the iteration's forwards have one key each.
    const bool steady = dcache.bucket_for(1) == dcache.bucket_for(G + 1);
    loop.device_half(steady ? StepKey{G, dcache.bucket_for(1), tcache.bucket_for(G + 1)} : StepKey{}, iteration);
    return G + 1;
  });
  return loop.result();
}

namespace {
struct SdSettings {
  int64_t gamma = 4;  // drafts per iteration
};

DecoderEntry sd_entry() {
  DecoderEntry e;
  e.name = "sd";
  e.summary = "speculative decoding: a small draft GPT proposes gamma tokens, the target verifies them";
  e.drafters = {"gpt"};
  e.read = [](DecoderFields& f, DecoderConfig& c) {
    c.method = SdSettings{f.whole("gamma", SdSettings{}.gamma, 1, 64)};
    read_rule(f, c, "exact");
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    return std::make_unique<SdDecoder>(m.target, m.draft_gpt, c.sampling, c.settings<SdSettings>().gamma, c.accept,
                                       m.neighbours);
  };
  return e;
}
const DecoderRegistration kSdRegistration(sd_entry());
}  // namespace

}  // namespace vispec
