// Speculative Jacobi decoding, probabilistic form (docs/algorithms.md "SJD"):
//
//   token 0 is sampled from the prefill, as AR; then per iteration and row:
//   window   [pending, d_1 .. d_w]: the carried drafts of the last iteration (each with the distribution q
//            it was sampled from), then new drafts drawn uniformly from the codebook (q one-hot on them)
//   forward  ONE target pass over the window gives p_0 .. p_w (p_j: the distribution after window[j])
//   verify   left to right, d_i with probability min(1, p_{i-1}(d_i) / q_i(d_i)); at the first rejection
//            sample norm(max(0, p_{i-1} - q_i)) and stop; all accepted: a bonus token from p_w
//   carry    the outputs after the new token were computed from a context with rejected drafts in it; their
//            samples y_j ~ p_j become the next drafts with q = p_j (the Jacobi update)
//   keep     pending + the accepted drafts in the cache; the new token is the next pending token
// Lossless: every draft is a sample of its q, so this is speculative sampling with a changing drafter.
// Randomness per (seed, sample id, position): kInit for new drafts, kDraft (draw = iteration) for carried
// samples, kAccept for tests, kResample after a rejection, kSample for token 0 and bonus tokens.
#include "decoding/sjd.h"

#include "core/rng.h"
#include "decoding/acceptance.h"
#include "decoding/iteration_stats.h"

namespace vispec {

DecodeResult SjdDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  const int64_t B = request.batch(), N = target_.gpt()->config().image_tokens();
  const int64_t V = target_.gpt()->config().vocab_size, W = window_;
  const auto device = target_.gpt()->tok_embeddings->weight.device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  std::vector<SampleStats> stats(static_cast<size_t>(B));
  auto tokens = torch::zeros({B, N}, i64);
  std::vector<int64_t> n(static_cast<size_t>(B), 1), iteration(static_cast<size_t>(B), 0);
  std::vector<std::vector<int64_t>> carry(static_cast<size_t>(B));  // carried drafts and their q
  std::vector<std::vector<torch::Tensor>> carry_q(static_cast<size_t>(B));

  auto t0 = IterationTimes::Clock::now();
  auto cache = target_.make_cache(B, W + 1);
  auto p0 = target_probs(target_.prefill(cache, request.conditions).logits.select(1, -1), params_).to(torch::kCPU, torch::kFloat64);
  cache.keep_all();
  for (int64_t b = 0; b < B; ++b) {
    tokens[b][0] = sample_token(p0[b], uniform({request.seed, request.sample_ids[size_t(b)]}, 0, Purpose::kSample));
    stats[size_t(b)].target_forwards = 1;
    stats[size_t(b)].bookkeeping_ms = IterationTimes::lap(t0) / double(B);
  }

  for (;;) {
    std::vector<int64_t> active;
    for (int64_t b = 0; b < B; ++b)
      if (n[size_t(b)] < N) active.push_back(b);
    if (active.empty()) break;
    IterationTimes times;
    t0 = IterationTimes::Clock::now();

    // ---- the window of every row: pending, carried drafts, new uniform drafts (q one-hot)
    auto block = torch::zeros({B, W + 1}, i64), positions = torch::zeros({B, W + 1}, i64);
    std::vector<std::vector<torch::Tensor>> q(static_cast<size_t>(B));
    for (int64_t b : active) {
      const int64_t nb = n[size_t(b)], drafts = std::min(W, N - nb);
      const RngKey key{request.seed, request.sample_ids[size_t(b)]};
      auto& c = carry[size_t(b)];
      auto& cq = carry_q[size_t(b)];
      c.resize(size_t(std::min<int64_t>(int64_t(c.size()), drafts)));
      cq.resize(c.size());
      while (int64_t(c.size()) < drafts) {
        const int64_t pos = nb + int64_t(c.size());
        const int64_t x = std::min(V - 1, int64_t(uniform(key, uint32_t(pos), Purpose::kInit, uint32_t(iteration[size_t(b)])) * double(V)));
        c.push_back(x);
        auto one = torch::zeros({V}, torch::kFloat64);
        one[x] = 1.0;
        cq.push_back(one);
      }
      block[b][0] = tokens[b][nb - 1];
      for (int64_t i = 0; i <= W; ++i) positions[b][i] = std::min(N - 1, nb - 1 + i);
      for (int64_t i = 0; i < drafts; ++i) block[b][i + 1] = c[size_t(i)];
      q[size_t(b)] = cq;
    }
    times.draft_ms = IterationTimes::lap(t0);

    // ---- one target forward over every window
    auto out = target_.decode_block(cache, block, positions, causal_mask(W + 1, device));
    auto p = target_probs(out.logits, params_).to(torch::kCPU, torch::kFloat64);  // [B, W + 1, V]
    times.verify_ms = IterationTimes::lap(t0);

    // ---- verify left to right; carry the stale samples
    std::vector<int64_t> kept(static_cast<size_t>(B), 0);
    for (int64_t b : active) {
      const int64_t nb = n[size_t(b)], drafts = int64_t(carry[size_t(b)].size()), it = iteration[size_t(b)]++;
      const RngKey key{request.seed, request.sample_ids[size_t(b)]};
      auto& s = stats[size_t(b)];
      int64_t a = 0;
      for (; a < drafts; ++a) {
        const int64_t x = carry[size_t(b)][size_t(a)];
        const auto& qa = q[size_t(b)][size_t(a)];
        const double px = p[b][a][x].item<double>(), qx = qa[x].item<double>();
        if (uniform(key, uint32_t(nb + a), Purpose::kAccept) >= (qx > 0 ? std::min(1.0, px / qx) : 1.0)) break;
        tokens[b][nb + a] = x;
      }
      s.drafted += drafts;
      s.accepted += a;
      kept[size_t(b)] = a + 1;  // pending + accepted drafts
      int64_t next = nb + a;
      if (next < N) {
        const bool rejected = a < drafts;
        const auto dist = rejected ? residual(p[b][a], q[size_t(b)][size_t(a)]) : p[b][a];
        tokens[b][next] = sample_token(dist, uniform(key, uint32_t(next), rejected ? Purpose::kResample : Purpose::kSample));
        ++next;
      }
      n[size_t(b)] = next;
      // The Jacobi update: outputs after the new token, sampled, are the next drafts (q = their p).
      std::vector<int64_t> c;
      std::vector<torch::Tensor> cq;
      for (int64_t j = a + 1; j <= drafts && nb + j < N; ++j) {
        c.push_back(sample_token(p[b][j], uniform(key, uint32_t(nb + j), Purpose::kDraft, uint32_t(it))));
        cq.push_back(p[b][j].clone());
      }
      carry[size_t(b)] = std::move(c);
      carry_q[size_t(b)] = std::move(cq);
    }
    times.resample_ms = IterationTimes::lap(t0);

    for (int64_t b : active) {
      std::vector<int64_t> idx(static_cast<size_t>(kept[size_t(b)]));
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);
      target_.keep(cache, b, idx);
    }
    times.bookkeeping_ms = IterationTimes::lap(t0);
    charge_iteration(stats, active, times, 0);
  }
  for (auto& s : stats) s.tokens = N;
  return {tokens, stats};
}

}  // namespace vispec
