#include "decoding/eagle_pairs.h"

#include "decoding/decode_rows.h"

#include <algorithm>

#include "core/rng.h"
#include "decoding/iteration_stats.h"

namespace vispec {

EaglePairs::EaglePairs(Gpt target, EagleDrafter drafter, int64_t batch, int64_t rows)
    : target_(std::move(target)), drafter_(std::move(drafter)), B_(batch), R_(rows),
      tokens_(static_cast<size_t>(batch)) {}

void EaglePairs::start(const torch::Tensor& prefill_hidden, const std::vector<int64_t>& first_tokens) {
  features_ = target_->norm(prefill_hidden.narrow(1, prefill_hidden.size(1) - 1, 1));  // [R, 1, D]
  for (int64_t b = 0; b < B_; ++b) tokens_[size_t(b)] = {first_tokens[size_t(b)]};
}

torch::Tensor EaglePairs::catch_up(KvCache& cache, const std::vector<int64_t>& root_index) {
  const auto device = target_->device();
  const int64_t N = target_->config().image_tokens();
  // Rows padded at the end to the longest; padding entries are not kept. Tokens and raster cells of every
  // drafter row, built here and uploaded as one [2, R, P] block.
  const int64_t P = features_.size(1);
  auto host = torch::zeros({2, R_, P}, torch::kInt64);
  auto h = host.accessor<int64_t, 3>();
  std::vector<int64_t> newest(static_cast<size_t>(R_));
  for (int64_t b = 0; b < B_; ++b) {
    const int64_t n = int64_t(tokens_[size_t(b)].size());
    const int64_t first_cell = std::max<int64_t>(0, root_index[size_t(b)] - (n - 1));
    for (int64_t s = 0; s < R_ / B_; ++s) {
      const int64_t row = b + s * B_;
      for (int64_t j = 0; j < P; ++j) {
        h[0][row][j] = j < n ? tokens_[size_t(b)][size_t(j)] : 0;
        h[1][row][j] = std::min(N - 1, first_cell + std::min(j, std::max<int64_t>(0, n - 1)));
      }
      newest[size_t(row)] = row * P + std::max<int64_t>(0, n - 1);
    }
  }
  const auto in = host.to(device);
  auto out = drafter_(features_, target_->embed_image(in[0]), in[1], causal_mask(P, device), &cache);
  // The pairs stay where they were written: bookkeeping, no data moves.
  std::vector<int64_t> kept;
  for (int64_t row = 0; row < R_; ++row) kept.push_back(int64_t(tokens_[size_t(row % B_)].size()));
  cache.shift_lengths(kept);
  return out.reshape({R_ * P, -1}).index_select(0, torch::tensor(newest, torch::kInt64).to(device));
}

void EaglePairs::queue(const torch::Tensor& hidden, const std::vector<std::vector<int64_t>>& paths,
                       const std::vector<std::vector<int64_t>>& path_tokens, const std::vector<int64_t>& next) {
  int64_t P = 1;
  for (const auto& p : paths) P = std::max<int64_t>(P, int64_t(p.size()));
  // Row b's pairs read the hidden states at its path's entries (padding repeats the last one).
  auto idx = torch::zeros({R_, P}, torch::kInt64);
  auto ia = idx.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B_; ++b) {
    const auto& path = paths[size_t(b)];
    tokens_[size_t(b)].clear();
    if (path.empty()) continue;
    tokens_[size_t(b)] = path_tokens[size_t(b)];
    tokens_[size_t(b)].push_back(next[size_t(b)]);
    for (int64_t s = 0; s < R_ / B_; ++s)
      for (int64_t j = 0; j < P; ++j) ia[b + s * B_][j] = path[size_t(std::min<int64_t>(j, int64_t(path.size()) - 1))];
  }
  const auto at = idx.to(hidden.device()).unsqueeze(-1).expand({R_, P, hidden.size(2)});
  features_ = target_->norm(hidden.gather(1, at));
}

EagleRows::EagleRows(CfgModel& target, EagleDrafter drafter, const SamplingParams& params,
                     const DecodeRequest& request, KvCache& cache)
    : pairs(target.gpt(), std::move(drafter), request.batch(), target.rows(request.batch())),
      clock(target.gpt()->device()), target_(target), cache_(cache), seed_(request.seed) {
  const int64_t B = request.batch(), N = target.gpt()->config().image_tokens();
  std::vector<int64_t> ids(request.sample_ids.begin(), request.sample_ids.end());
  sample_ids_ = torch::tensor(ids, torch::kInt64).to(target.gpt()->device());
  tokens = torch::zeros({B, N}, torch::kInt64);
  roots.assign(size_t(B), 0);
  root_index.assign(size_t(B), 0);
  stats.assign(size_t(B), SampleStats{});
  done_.assign(size_t(B), 0);
  auto pre = target.prefill(cache, request.conditions);
  cache.keep_all();
  // Every row's first token at once, as AR draws it; one read.
  const auto first = read_to_host(first_tokens(pre.logits, params, seed_, sample_ids_));
  const auto fa = first.accessor<int64_t, 1>();  // (an item() per row would be a read per row)
  auto ta = tokens.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    roots[size_t(b)] = fa[b];
    ta[b][0] = roots[size_t(b)];
  }
  pairs.start(pre.hidden, roots);
  for (auto& s : stats) s.target_forwards = 1;
  clock.charge(clock.lap(), all_rows(B), &SampleStats::bookkeeping_ms);
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
  std::vector<std::vector<int64_t>> path_tokens(kept.size());
  for (size_t b = 0; b < kept.size(); ++b)
    for (size_t j = 1; j < kept[b].size(); ++j) path_tokens[b].push_back(trees[b].token[size_t(kept[b][j])]);
  pairs.queue(hidden, kept, path_tokens, roots);
}

DecodeResult EagleRows::result() {
  for (auto& s : stats) s.tokens = tokens.size(1);
  clock.settle(stats);
  return {tokens, stats};
}

}  // namespace vispec
