// SSD (Xiang et al., the SSD paper; docs/algorithms.md "SSD"). No public code: this is
// our reading of the paper, step by step.
//
//   heads      h^(cell + offset) = f([h_pre(cell); e(token(cell))]) (models/ssd_heads): horizontal heads for
//              the next kh cells of a row, vertical heads for the cell 1 .. kv rows below; a draft is sampled
//              from the target's own output head on RMSNorm(h^) (after CFG and the sampling chain; the argmax
//              at T = 0). h_pre(cell) is the target's state whose logits gave token(cell).
//   first row  speculative decoding with the horizontal heads: from the newest token, kh drafts; ONE target
//              forward; accept left to right with min(1, p/q); at the first rejection sample the residual;
//              all accepted: a bonus token from p. The row's last token is then committed by one forward.
//   later rows the kv rows below the newest committed row are drafted at once by the vertical heads from that
//              row's states and tokens, then verified and corrected in ROUNDS, one target forward each over
//              the drafted rows (the committed rows in the cache): every drafted cell independently keeps its
//              token with probability min(1, p/q) or replaces it by a sample from norm(max(0, p - q)), p read
//              off this round's forward; nothing is rolled back, the next round re-reads the corrected rows,
//              and a kept or replaced token counts as a draw from this round's p (q := p). Then ONE forward
//              commits a row to the cache and gives its states (for the next vertical drafts) and the
//              distribution of the next row's first cell.
//   staging    kv = 1: r rounds, commit. kv >= 2: b rounds on all kv rows, commit the first, then i rounds on
//              the rest before each further commit.
// Lossy by design: a cell is verified against its context of that round, which later rounds may change. At
// T = 0 with r >= W rounds each row is AR's greedy row (round j fixes cell j - 1 for good: a Jacobi sweep).
// Randomness per (seed, sample id, raster index): kDraft for drafts, kAccept/kResample with draw = round.
#include "decoding/ssd.h"

#include <algorithm>

#include "core/check.h"
#include "core/rng.h"
#include "decoding/iteration_stats.h"

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

SsdDecoder::SsdDecoder(Gpt target, SsdHeads heads, SamplingParams params, SsdParams ssd)
    : target_(std::move(target), params.cfg_scale), heads_(std::move(heads)), params_(params), ssd_(ssd) {
  VISPEC_ASSERT(ssd_.kh >= 1 && ssd_.kh <= heads_->horizontal_count(), "kh ", ssd_.kh, " but the heads have ",
                heads_->horizontal_count(), " horizontal heads");
  VISPEC_ASSERT(ssd_.kv >= 1 && ssd_.kv <= heads_->vertical_count(), "kv ", ssd_.kv, " but the heads have ",
                heads_->vertical_count(), " vertical heads");
}

DecodeResult SsdDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  Gpt gpt = target_.gpt();
  const auto& config = gpt->config();
  const int64_t B = request.batch(), W = config.grid_size, H = config.grid_size, N = W * H;
  const int64_t R = target_.rows(B), V = config.vocab_size, K = ssd_.kh;
  const auto device = gpt->tok_embeddings->weight.device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  std::vector<SampleStats> stats(static_cast<size_t>(B));
  auto tokens = torch::zeros({B, N}, i64);  // CPU
  auto key = [&](int64_t b) { return RngKey{request.seed, request.sample_ids[size_t(b)]}; };
  // h_pre of every cell (both CFG streams), filled as cells are committed.
  torch::Tensor states;
  // A head's drafts: states/tokens of source cells [R, M, D] / [B, M] -> the guided, processed q [B, M, V]
  // and the drafted tokens [B, M] (sampled at the target cells `cells`, argmax at T = 0).
  auto draft = [&](int64_t head, const torch::Tensor& src_states, const torch::Tensor& src_tokens,
                   const std::vector<int64_t>& cells_per_row) {
    const int64_t M = src_tokens.size(1);
    auto tok = src_tokens.to(device);
    auto h = heads_->head(head)(src_states, gpt->tok_embeddings(R > B ? torch::cat({tok, tok}) : tok));
    auto logits = gpt->output(gpt->norm(h)).to(torch::kFloat32);
    if (target_.guided()) logits = cfg_combine(logits, params_.cfg_scale);
    auto q = target_probs(logits, params_);
    auto u = torch::empty({B * M}, torch::kFloat64);
    auto ua = u.accessor<double, 1>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t m = 0; m < M; ++m)
        ua[b * M + m] = uniform(key(b), uint32_t(std::min(N - 1, cells_per_row[size_t(b)] + m)), Purpose::kDraft);
    auto x = sample_from_probs(q.reshape({B * M, V}), u.to(device)).view({B, M});
    return std::make_pair(q, x.cpu());
  };

  auto t0 = IterationTimes::Clock::now();
  auto cache = target_.make_cache(B, std::max(K + 1, ssd_.kv * W));
  auto pre = target_.prefill(cache, request.conditions);
  cache.keep_all();
  states = torch::zeros({R, N + 1, config.dim}, pre.hidden.options());
  states.select(1, 0).copy_(pre.hidden.select(1, pre.hidden.size(1) - 1));
  {
    auto p0 = target_probs(pre.logits.select(1, -1), params_).to(torch::kCPU, torch::kFloat64);
    for (int64_t b = 0; b < B; ++b) tokens[b][0] = sample_token(p0[b], uniform(key(b), 0, Purpose::kSample));
  }
  for (auto& s : stats) {
    s.target_forwards = 1;
    s.bookkeeping_ms += IterationTimes::lap(t0) / double(B);
  }

  // ---- first row: speculative decoding with the horizontal heads. n[b]: tokens committed; the newest is
  // pending (not in the cache yet).
  std::vector<int64_t> n(static_cast<size_t>(B), 1);
  for (;;) {
    std::vector<int64_t> active;
    for (int64_t b = 0; b < B; ++b)
      if (n[size_t(b)] < W) active.push_back(b);
    if (active.empty()) break;
    IterationTimes times;
    t0 = IterationTimes::Clock::now();
    std::vector<int64_t> newest(static_cast<size_t>(B)), first_draft(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      newest[size_t(b)] = std::min(n[size_t(b)], W) - 1;
      first_draft[size_t(b)] = newest[size_t(b)] + 1;
    }
    // Every drafter row (both streams of sample b) starts from the state and token of b's newest cell.
    std::vector<int64_t> newest_of_row(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) newest_of_row[size_t(r)] = newest[size_t(r % B)];
    auto src_states = states.gather(1, torch::tensor(newest_of_row, i64).to(device).view({R, 1, 1}).expand({R, 1, config.dim}));
    auto src_tokens = tokens.gather(1, torch::tensor(newest, i64).view({B, 1}));
    std::vector<torch::Tensor> q_list;
    auto drafts = torch::zeros({B, K}, i64);
    for (int64_t k = 0; k < K; ++k) {
      std::vector<int64_t> cells(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b) cells[size_t(b)] = first_draft[size_t(b)] + k;
      auto [q, x] = draft(k, src_states, src_tokens, cells);
      q_list.push_back(q.select(1, 0));
      drafts.select(1, k).copy_(x.select(1, 0));
    }
    auto q = torch::stack(q_list, 1);  // [B, K, V]
    times.draft_ms = IterationTimes::lap(t0);

    auto block = torch::cat({src_tokens, drafts}, 1);  // [B, 1 + K]: the pending token, then the drafts
    auto pos = torch::empty({B, 1 + K}, i64);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j <= K; ++j) pos[b][j] = std::min(N - 1, newest[size_t(b)] + j);
    auto out = target_.decode_block(cache, block.to(device), pos.to(device), causal_mask(1 + K, device));
    auto p = target_probs(out.logits, params_);  // [B, 1 + K, V]: p[:, j] is the distribution at newest + 1 + j
    times.verify_ms = IterationTimes::lap(t0);

    auto row = [](const torch::Tensor& t, int64_t b, int64_t j) { return t[b][j].to(torch::kCPU, torch::kFloat64); };
    for (int64_t b : active) {
      const int64_t nb = n[size_t(b)], limit = std::min(K, W - nb);
      auto& s = stats[size_t(b)];
      int64_t a = 0;
      for (; a < limit; ++a) {
        const int64_t x = drafts[b][a].item<int64_t>();
        const double px = p[b][a][x].item<double>(), qx = q[b][a][x].item<double>();
        if (uniform(key(b), uint32_t(nb + a), Purpose::kAccept) >= (qx > 0 ? std::min(1.0, px / qx) : 1.0)) break;
        tokens[b][nb + a] = x;
      }
      s.drafted += limit;
      s.accepted += a;
      int64_t next = nb + a;
      if (a < limit) {
        const auto res = (row(p, b, a) - row(q, b, a)).clamp_min(0);
        tokens[b][next] = sample_token(res.sum().item<double>() > 0 ? res : row(p, b, a),
                                       uniform(key(b), uint32_t(next), Purpose::kResample));
        ++next;
      } else if (next < W) {
        tokens[b][next] = sample_token(row(p, b, a), uniform(key(b), uint32_t(next), Purpose::kSample));
        ++next;
      }
      // Block entries 0 .. a hold cells newest .. newest + a, whose contexts were all committed: their
      // outputs are the states of cells newest + 1 ...; keep every committed cell but the new newest.
      for (int64_t s2 = 0; s2 < R / B; ++s2)
          states[b + s2 * B].narrow(0, nb, next - nb).copy_(out.hidden[b + s2 * B].narrow(0, 0, next - nb));
      std::vector<int64_t> keep(static_cast<size_t>(next - nb));
      for (int64_t j = 0; j < next - nb; ++j) keep[size_t(j)] = j;
      target_.keep(cache, b, keep);
      n[size_t(b)] = next;
    }
    times.resample_ms = IterationTimes::lap(t0);
    charge_iteration(stats, active, times, 1);
  }

  // ---- commit a row (its cells not in the cache yet, from `first`): one forward, kept whole; returns the
  // guided distribution of the cell after it (the next row's first cell).
  auto commit = [&](int64_t first, int64_t count) {
    auto pos = torch::arange(first, first + count, i64).unsqueeze(0).expand({B, count}).contiguous();
    auto out = target_.decode_block(cache, tokens.narrow(1, first, count).to(device), pos.to(device),
                                    causal_mask(count, device));
    cache.keep_all();
    states.narrow(1, first + 1, count).copy_(out.hidden);
    return target_probs(out.logits.select(1, count - 1), params_);  // [B, V]
  };
  std::vector<int64_t> all(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) all[size_t(b)] = b;
  auto t1 = IterationTimes::Clock::now();
  auto next_p = commit(W - 1, 1);  // the first row's last token
  {
    IterationTimes times;
    times.verify_ms = IterationTimes::lap(t1);
    charge_iteration(stats, all, times, 0);
  }

  // ---- later rows: vertical drafts, rounds of verify-and-correct, commits
  for (int64_t y = 1; y < H;) {
    const int64_t rows = std::min(ssd_.kv, H - y);
    IterationTimes times;
    t0 = IterationTimes::Clock::now();
    // Draft rows y .. y + rows - 1 from row y - 1: q [B, rows W, V] stays on the device.
    auto src_tokens = tokens.narrow(1, (y - 1) * W, W);
    auto src_states = states.narrow(1, (y - 1) * W, W);
    std::vector<torch::Tensor> qs;
    for (int64_t k = 0; k < rows; ++k) {
      auto [q, x] = draft(heads_->horizontal_count() + k, src_states, src_tokens,
                          std::vector<int64_t>(size_t(B), (y + k) * W));
      tokens.narrow(1, (y + k) * W, W).copy_(x);
      qs.push_back(q);
    }
    auto q = torch::cat(qs, 1);
    times.draft_ms = IterationTimes::lap(t0);
    charge_iteration(stats, all, times, 1, 0);

    // `rounds` rounds of verify-and-correct on rows from .. y + rows - 1, q [B, (y + rows - from) W, V].
    int64_t round_index = 0;
    auto verify_rounds = [&](int64_t from, int64_t rounds, torch::Tensor& q_rows) {
      const int64_t first = from * W, T = (y + rows - from) * W;
      auto pos = torch::arange(first, first + T, i64).unsqueeze(0).expand({B, T}).contiguous().to(device);
      for (int64_t j = 0; j < rounds; ++j, ++round_index) {
        IterationTimes rt;
        auto t = IterationTimes::Clock::now();
        auto x = tokens.narrow(1, first, T);
        auto out = target_.decode_block(cache, x.to(device), pos, causal_mask(T, device));
        // p of cell first + m: next_p for m = 0, else this forward's output at m - 1.
        auto p = torch::cat({next_p.unsqueeze(1), target_probs(out.logits.narrow(1, 0, T - 1), params_)}, 1);
        rt.verify_ms = IterationTimes::lap(t);
        auto xd = x.to(device).unsqueeze(-1);
        auto px = p.gather(-1, xd).squeeze(-1).to(torch::kFloat64), qx = q_rows.gather(-1, xd).squeeze(-1).to(torch::kFloat64);
        auto keep_prob = torch::where(qx > 0, torch::clamp_max(px / qx, 1.0), torch::ones_like(px)).cpu();
        auto residual = (p - q_rows).clamp_min(0);
        residual = torch::where(residual.sum(-1, true) > 0, residual, p);
        auto ua = torch::empty({B, T}, torch::kFloat64), ur = torch::empty({B * T}, torch::kFloat64);
        auto uaa = ua.accessor<double, 2>();
        auto ura = ur.accessor<double, 1>();
        for (int64_t b = 0; b < B; ++b)
          for (int64_t m = 0; m < T; ++m) {
            uaa[b][m] = uniform(key(b), uint32_t(first + m), Purpose::kAccept, uint32_t(round_index));
            ura[b * T + m] = uniform(key(b), uint32_t(first + m), Purpose::kResample, uint32_t(round_index));
          }
        auto fresh = sample_from_probs(residual.reshape({B * T, V}), ur.to(device)).view({B, T}).cpu();
        auto kept = ua < keep_prob;
        if (round_index == 0)  // the drafts' own acceptance: the first round's verdicts (r = 0 verifies none)
          for (int64_t b = 0; b < B; ++b) {
            stats[size_t(b)].drafted += T;
            stats[size_t(b)].accepted += kept[b].sum().item<int64_t>();
          }
        x.copy_(torch::where(kept, x, fresh));
        q_rows = p;  // every cell is now a draw from this round's p
        rt.resample_ms = IterationTimes::lap(t);
        charge_iteration(stats, all, rt, 0);
      }
    };
    verify_rounds(y, rows == 1 && ssd_.kv == 1 ? ssd_.r : ssd_.b, q);
    for (int64_t k = 0; k < rows; ++k) {
      IterationTimes ct;
      auto t = IterationTimes::Clock::now();
      next_p = commit((y + k) * W, W);
      ct.verify_ms = IterationTimes::lap(t);
      charge_iteration(stats, all, ct, 0);
      if (k + 1 < rows) {
        auto rest = q.narrow(1, (k + 1) * W, (rows - k - 1) * W).contiguous();
        verify_rounds(y + k + 1, ssd_.i, rest);
        q = torch::cat({q.narrow(1, 0, (k + 1) * W), rest}, 1);
      }
    }
    y += rows;
  }
  for (auto& s : stats) s.tokens = N;
  return {tokens, stats};
}

}  // namespace vispec
