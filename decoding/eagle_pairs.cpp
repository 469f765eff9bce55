#include "decoding/eagle_pairs.h"

#include "decoding/decode_rows.h"

#include <algorithm>

#include "core/rng.h"
#include "decoding/iteration_stats.h"

namespace vispec {

EaglePairs::EaglePairs(Gpt target, EagleDrafter drafter, int64_t batch, int64_t rows)
    : target_(std::move(target)), drafter_(std::move(drafter)), B_(batch), R_(rows),
      tokens_(static_cast<size_t>(batch)), features_(static_cast<size_t>(batch)) {}

void EaglePairs::start(const torch::Tensor& prefill_hidden, const std::vector<int64_t>& first_tokens) {
  const auto f0 = target_->norm(prefill_hidden.narrow(1, prefill_hidden.size(1) - 1, 1));  // [R, 1, D]
  for (int64_t b = 0; b < B_; ++b) {
    tokens_[size_t(b)] = {first_tokens[size_t(b)]};
    features_[size_t(b)] = R_ > B_ ? torch::stack({f0[b], f0[b + B_]}) : f0[b].unsqueeze(0);
  }
}

torch::Tensor EaglePairs::catch_up(KvCache& cache, const std::vector<int64_t>& root_index) {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  const auto device = target_->tok_embeddings->weight.device();
  const int64_t N = target_->config().image_tokens(), D = target_->config().dim;
  // Rows padded at the end to the longest; padding entries are not kept.
  int64_t P = 1;
  for (auto& pairs : tokens_) P = std::max<int64_t>(P, int64_t(pairs.size()));
  auto feats = torch::zeros({R_, P, D}, target_->tok_embeddings->weight.options());
  auto tok = torch::zeros({R_, P}, i64), cells = torch::zeros({R_, P}, i64);
  for (int64_t b = 0; b < B_; ++b) {
    const int64_t n = int64_t(tokens_[size_t(b)].size());
    const int64_t first_cell = std::max<int64_t>(0, root_index[size_t(b)] - (n - 1));
    for (int64_t s = 0; s < R_ / B_; ++s) {
      const int64_t row = b + s * B_;
      if (n > 0) feats[row].narrow(0, 0, n).copy_(features_[size_t(b)][s]);
      for (int64_t j = 0; j < P; ++j) {
        tok[row][j] = j < n ? tokens_[size_t(b)][size_t(j)] : 0;
        cells[row][j] = std::min(N - 1, first_cell + std::min(j, std::max<int64_t>(0, n - 1)));
      }
    }
  }
  auto out = drafter_(feats.to(device), target_->tok_embeddings(tok.to(device)), cells.to(device),
                      causal_mask(P, device), &cache);
  std::vector<int64_t> newest(static_cast<size_t>(R_));
  for (int64_t b = 0; b < B_; ++b) {
    const int64_t n = int64_t(tokens_[size_t(b)].size());
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) idx[size_t(j)] = j;
    for (int64_t s = 0; s < R_ / B_; ++s) {
      cache.keep(b + s * B_, idx);
      newest[size_t(b + s * B_)] = (b + s * B_) * P + std::max<int64_t>(0, n - 1);
    }
  }
  return out.reshape({R_ * P, -1}).index_select(0, torch::tensor(newest, i64).to(device));
}

void EaglePairs::queue(int64_t b, const torch::Tensor& hidden, const std::vector<int64_t>& path,
                       const std::vector<int64_t>& path_tokens, int64_t next) {
  tokens_[size_t(b)] = path_tokens;
  tokens_[size_t(b)].push_back(next);
  auto idx = torch::tensor(path, torch::kInt64).to(hidden.device());
  std::vector<torch::Tensor> per_stream;
  for (int64_t s = 0; s < R_ / B_; ++s) per_stream.push_back(target_->norm(hidden[b + s * B_].index_select(0, idx)));
  features_[size_t(b)] = torch::stack(per_stream);
}

EagleRows::EagleRows(CfgModel& target, EagleDrafter drafter, const SamplingParams& params,
                     const DecodeRequest& request, KvCache& cache)
    : pairs(target.gpt(), std::move(drafter), request.batch(), target.rows(request.batch())),
      target_(target), cache_(cache), seed_(request.seed) {
  const int64_t B = request.batch(), N = target.gpt()->config().image_tokens();
  std::vector<int64_t> ids(request.sample_ids.begin(), request.sample_ids.end());
  sample_ids_ = torch::tensor(ids, torch::kInt64).to(target.gpt()->tok_embeddings->weight.device());
  auto t0 = IterationTimes::Clock::now();
  tokens = torch::zeros({B, N}, torch::kInt64);
  roots.assign(size_t(B), 0);
  root_index.assign(size_t(B), 0);
  stats.assign(size_t(B), SampleStats{});
  done_.assign(size_t(B), 0);
  auto pre = target.prefill(cache, request.conditions);
  cache.keep_all();
  auto p0 = target_probs(pre.logits.select(1, -1), params).to(torch::kCPU, torch::kFloat64);
  for (int64_t b = 0; b < B; ++b) {
    roots[size_t(b)] = sample_token(p0[b], uniform({request.seed, request.sample_ids[size_t(b)]}, 0, Purpose::kSample));
    tokens[b][0] = roots[size_t(b)];
  }
  pairs.start(pre.hidden, roots);
  for (auto& s : stats) {
    s.target_forwards = 1;
    s.bookkeeping_ms += IterationTimes::lap(t0) / double(B);
  }
}

std::vector<int64_t> EagleRows::active() const {
  std::vector<int64_t> a;
  for (size_t b = 0; b < done_.size(); ++b)
    if (!done_[b]) a.push_back(int64_t(b));
  return a;
}

std::vector<std::vector<int64_t>> EagleRows::walk(const std::vector<int64_t>& active,
                                                  const std::vector<DraftTree>& trees, const TreeTables& tables,
                                                  const torch::Tensor& logits, const SamplingParams& params,
                                                  const ChainRule& rule, const std::vector<int64_t>& lengths,
                                                  int64_t levels, const torch::Tensor& node_q,
                                                  const torch::Tensor& q_slot) {
  const auto device = sample_ids_.device();
  const int64_t N = tokens.size(1);
  std::vector<int64_t> limit(root_index.size());  // drafts each row may still accept: cells after its root
  for (size_t b = 0; b < limit.size(); ++b) limit[b] = N - 1 - root_index[b];
  const auto limits = torch::tensor(limit, torch::kInt64).to(device);
  const auto u = tree_uniforms(seed_, sample_ids_, torch::tensor(root_index, torch::kInt64).to(device), levels,
                               tables.children.size(2), N, rule, params.greedy());
  const auto verdict = params.greedy()
                           ? verify_tree_greedy(rule, greedy_tokens(logits), tables, lengths, limits, u)
                           : verify_tree(rule, target_probs(logits, params), tables, node_q, q_slot, lengths, limits, u);
  const int64_t P = verdict.path.size(1);
  const auto host = read_to_host(torch::cat(
      {verdict.path, torch::stack({verdict.accepted, verdict.next, verdict.sampled.to(torch::kInt64), verdict.tried}, 1)},
      1)).contiguous();
  const auto h = host.accessor<int64_t, 2>();
  auto t = tokens.accessor<int64_t, 2>();
  std::vector<std::vector<int64_t>> paths(stats.size());
  for (int64_t b : active) {
    const int64_t a = h[b][P], root = root_index[size_t(b)];
    const bool sampled = h[b][P + 2] != 0;
    auto& path = paths[size_t(b)];
    for (int64_t j = 0; j <= a; ++j) path.push_back(h[b][j]);
    for (int64_t j = 1; j <= a; ++j) t[b][root + j] = trees[size_t(b)].token[size_t(path[size_t(j)])];
    if (sampled) {
      roots[size_t(b)] = h[b][P + 1];
      t[b][root + a + 1] = roots[size_t(b)];
    }
    stats[size_t(b)].drafted += h[b][P + 3];
    stats[size_t(b)].accepted += a;
    end_walk(b, root + a + (sampled ? 1 : 0), sampled);
  }
  return paths;
}

void EagleRows::end_walk(int64_t b, int64_t index, bool sampled) {
  root_index[size_t(b)] = index;
  // Done when the raster is full: by accepted drafts, or by a sampled token in the last cell.
  if (!sampled || index == tokens.size(1) - 1) {
    done_[size_t(b)] = 1;
    pairs.finish(b);
  }
}

void EagleRows::keep_paths(const std::vector<int64_t>& active, const std::vector<DraftTree>& trees,
                           const std::vector<std::vector<int64_t>>& paths, const torch::Tensor& hidden) {
  std::vector<std::vector<int64_t>> kept(done_.size());
  for (int64_t b : active)
    if (!done_[size_t(b)]) kept[size_t(b)] = paths[size_t(b)];
  target_.keep_paths(cache_, kept);
  for (int64_t b : active) {
    if (done_[size_t(b)]) continue;
    const auto& path = paths[size_t(b)];
    std::vector<int64_t> path_tokens;
    for (size_t j = 1; j < path.size(); ++j) path_tokens.push_back(trees[size_t(b)].token[size_t(path[j])]);
    pairs.queue(b, hidden, path, path_tokens, roots[size_t(b)]);
  }
}

DecodeResult EagleRows::result() {
  for (auto& s : stats) s.tokens = tokens.size(1);
  return {tokens, stats};
}

}  // namespace vispec
