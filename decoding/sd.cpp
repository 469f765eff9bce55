// Speculative decoding, one iteration per row (docs/algorithms.md "SD"):
//
//   draft    the drafter feeds the row's pending token, then samples x_1 .. x_gamma from its own q, feeding
//            each one (gamma + 1 drafter forwards; the last completes the drafter's cache)
//   verify   ONE target forward over [pending, x_1 .. x_gamma] gives p at the gamma + 1 positions
//   accept   left to right, x_j with probability rule(p_j, q_j, x_j, depth j) (decoding/acceptance.h);
//            at the first rejection sample the rule's rejection distribution and stop;
//            if all are accepted sample a bonus token from p_{gamma + 1}
//   keep     target cache: pending + the accepted drafts; drafter cache truncated to the same; the
//            resampled or bonus token becomes the next pending token (fed by the next iteration)
// Every row of a batch runs its own iteration in the same forwards (rows sit at different positions; the
// cache keeps per-row lengths). With the exact rule the output distribution is the target's (lossless);
// at temperature 0 p and q are one-hot and the tokens are AR's greedy tokens.
// Randomness per (seed, sample id, position): kDraft for drafts, kAccept for the tests, kResample after a
// rejection, kSample for bonus tokens.
#include "decoding/sd.h"

#include "core/check.h"
#include "core/rng.h"
#include "decoding/iteration_stats.h"

namespace vispec {

namespace {
// One uniform per row, each at its own position.
torch::Tensor row_uniforms(const DecodeRequest& r, const std::vector<int64_t>& positions, Purpose purpose) {
  auto u = torch::empty({int64_t(positions.size())}, torch::kFloat64);
  for (size_t b = 0; b < positions.size(); ++b)
    u[int64_t(b)] = uniform(RngKey{r.seed, r.sample_ids[b]}, uint32_t(positions[b]), purpose);
  return u;
}
}  // namespace

SdDecoder::SdDecoder(Gpt target, Gpt drafter, SamplingParams params, int64_t gamma, AcceptanceParams accept,
                     std::shared_ptr<const CodebookNeighbours> neighbours)
    : target_(std::move(target), params.cfg_scale), drafter_(std::move(drafter), params.cfg_scale), params_(params),
      gamma_(gamma), accept_(accept), neighbours_(std::move(neighbours)) {
  VISPEC_ASSERT(!accept_.needs_neighbours() || neighbours_, "LANTERN rules need the codebook neighbour table");
}

DecodeResult SdDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  const int64_t B = request.batch(), N = target_.gpt()->config().image_tokens(), G = gamma_;
  const auto device = target_.gpt()->tok_embeddings->weight.device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  std::vector<SampleStats> stats(static_cast<size_t>(B));
  auto tokens = torch::zeros({B, N}, i64);
  std::vector<int64_t> n(static_cast<size_t>(B), 0), pending(static_cast<size_t>(B), 0);

  auto t0 = IterationTimes::Clock::now();
  auto tcache = target_.make_cache(B, G + 1), dcache = drafter_.make_cache(B, G + 1);
  auto first_p = target_probs(target_.prefill(tcache, request.conditions).logits.select(1, -1), params_);
  tcache.keep_all();
  auto q_logits = drafter_.prefill(dcache, request.conditions).logits.select(1, -1);
  dcache.keep_all();
  std::vector<int64_t> drafter_committed(static_cast<size_t>(B), dcache.length(0));
  for (auto& s : stats) {
    s.target_forwards = s.draft_forwards = 1;
    s.bookkeeping_ms += IterationTimes::lap(t0) / double(B);
  }

  for (bool first = true;; first = false) {
    std::vector<int64_t> active;
    for (int64_t b = 0; b < B; ++b)
      if (n[size_t(b)] < N) active.push_back(b);
    if (active.empty()) break;
    auto positions_from = [&](int64_t offset, int64_t count) {  // [B, count] positions n + offset + j, clamped
      auto pos = torch::empty({B, count}, i64);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < count; ++j) pos[b][j] = std::min(N - 1, std::max<int64_t>(0, n[size_t(b)] + offset + j));
      return pos;
    };
    auto pending_tokens = torch::tensor(pending, i64).view({B, 1});

    // ---- draft
    IterationTimes times;
    t0 = IterationTimes::Clock::now();
    const auto one = torch::ones({1, 1}, torch::kBool);
    if (!first) {
      q_logits = drafter_.decode_block(dcache, pending_tokens, positions_from(-1, 1), one).logits.select(1, 0);
      dcache.keep_all();
    }
    auto drafts = torch::empty({B, G}, i64);
    std::vector<torch::Tensor> q_steps;
    for (int64_t j = 0; j < G; ++j) {
      auto q = target_probs(q_logits, params_);
      std::vector<int64_t> pos(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b) pos[size_t(b)] = std::min(N - 1, n[size_t(b)] + j);
      auto x = sample_from_probs(q, row_uniforms(request, pos, Purpose::kDraft)).to(torch::kCPU);
      drafts.select(1, j).copy_(x);
      q_steps.push_back(q);
      q_logits = drafter_.decode_block(dcache, x.view({B, 1}), positions_from(j, 1), one).logits.select(1, 0);
      dcache.keep_all();
    }
    auto q = torch::stack(q_steps, 1);  // [B, G, V]
    times.draft_ms = IterationTimes::lap(t0);

    // ---- verify: one target forward
    auto block = first ? drafts : torch::cat({pending_tokens, drafts}, 1);
    auto out = target_.decode_block(tcache, block, positions_from(first ? 0 : -1, block.size(1)),
                                    causal_mask(block.size(1), device));
    auto p = target_probs(out.logits, params_);
    if (first) p = torch::cat({first_p.unsqueeze(1), p.narrow(1, 0, G)}, 1);
    // p [B, G + 1, V] (p[b, j]: the distribution at n_b + j) and q stay on the device; the test loop brings
    // over the rows it reads, as float64 for the rules.
    auto row = [](const torch::Tensor& t, int64_t b, int64_t j) { return t[b][j].to(torch::kCPU, torch::kFloat64); };
    times.verify_ms = IterationTimes::lap(t0);

    // ---- accept, resample
    std::vector<int64_t> accepted(static_cast<size_t>(B), 0);
    for (int64_t b : active) {
      const int64_t nb = n[size_t(b)], limit = std::min(G, N - nb);
      const RngKey key{request.seed, request.sample_ids[size_t(b)]};
      auto& s = stats[size_t(b)];
      int64_t a = 0;
      for (; a < limit; ++a) {
        const int64_t x = drafts[b][a].item<int64_t>();
        const int32_t* nn = accept_.needs_neighbours() ? neighbours_->row(x) : nullptr;
        const double prob = acceptance_probability(row(p, b, a), row(q, b, a), x, a + 1, G, accept_, nn);
        if (uniform(key, uint32_t(nb + a), Purpose::kAccept) >= prob) break;
        tokens[b][nb + a] = x;
      }
      s.drafted += limit;
      s.accepted += a;
      accepted[size_t(b)] = a;
      int64_t next = nb + a;
      if (a < limit) {  // rejected at depth a + 1
        const int64_t x = drafts[b][a].item<int64_t>();
        const int32_t* nn = accept_.needs_neighbours() ? neighbours_->row(x) : nullptr;
        auto r = rejection_distribution(row(p, b, a), row(q, b, a), x, a + 1, G, accept_, nn);
        pending[size_t(b)] = sample_token(r, uniform(key, uint32_t(next), Purpose::kResample));
      } else if (next < N) {  // all accepted: the bonus token from the target's last distribution
        pending[size_t(b)] = sample_token(row(p, b, a), uniform(key, uint32_t(next), Purpose::kSample));
      } else {
        n[size_t(b)] = N;
        continue;
      }
      tokens[b][next] = pending[size_t(b)];
      n[size_t(b)] = next + 1;
    }
    times.resample_ms = IterationTimes::lap(t0);

    // ---- keep what was accepted in both caches
    for (int64_t b : active) {
      const int64_t kept = accepted[size_t(b)] + (first ? 0 : 1);  // [pending,] x_1 .. x_a
      std::vector<int64_t> idx(static_cast<size_t>(kept));
      for (int64_t i = 0; i < kept; ++i) idx[size_t(i)] = i;
      target_.keep(tcache, b, idx);
    }
    for (int64_t b = 0; b < B; ++b) {
      const bool was_active = std::find(active.begin(), active.end(), b) != active.end();
      if (was_active) drafter_committed[size_t(b)] += accepted[size_t(b)] + (first ? 0 : 1);
      drafter_.truncate(dcache, b, drafter_committed[size_t(b)]);
    }
    times.bookkeeping_ms = IterationTimes::lap(t0);
    charge_iteration(stats, active, times, G + (first ? 0 : 1));
  }
  for (auto& s : stats) s.tokens = N;
  return {tokens, stats};
}

}  // namespace vispec
