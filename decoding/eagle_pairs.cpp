#include "decoding/eagle_pairs.h"

#include <algorithm>

namespace vispec {

EaglePairs::EaglePairs(CfgModel& target, KvCache& tcache, EagleDrafter drafter, StaticForwards& drafter_steps,
                       int64_t batch)
    : target_(target), tcache_(tcache), gpt_(target.gpt()), drafter_(std::move(drafter)), steps_(drafter_steps),
      B_(batch), R_(target.rows(batch)), waiting_(static_cast<size_t>(batch), 0) {}

KvCache EaglePairs::drafter_cache(int64_t extra) {
  return steps_.make_cache(R_, gpt_->config().image_tokens() + extra, [&] { return drafter_->make_cache(R_, extra); });
}

torch::Tensor EaglePairs::draft(KvCache& dcache, const torch::Tensor& features, const torch::Tensor& tokens,
                                const torch::Tensor& cells, const torch::Tensor& mask) {
  return steps_.forward(dcache, tokens.size(1), {features, tokens, cells, mask},
                        [&](const std::vector<torch::Tensor>& in) {
                          return std::vector<torch::Tensor>{
                              drafter_(in[0], gpt_->embed_image(in[1]), in[2], in[3], &dcache)};
                        })[0];
}

void EaglePairs::start(const SamplingParams& params, const DecodeRequest& request, DecodeRows& rows) {
  auto pre = target_.prefill(tcache_, request.conditions);
  tcache_.keep_all();
  rows.start(pre.logits, params);
  rows.read_newest();
  features_ = gpt_->norm(pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1));  // [R, 1, D]
  std::fill(waiting_.begin(), waiting_.end(), 1);  // the first token
  for (auto& s : rows.stats) s.target_forwards = 1;
}

torch::Tensor EaglePairs::catch_up(KvCache& dcache, const DecodeRows& rows) {
  const auto device = gpt_->device();
  const int64_t N = rows.cells();
  // Rows padded at the end to the longest; padding entries are not kept. The raster cells of every drafter
  // row's pairs and which are real, built here and uploaded as one [2, R, P] block; their tokens are the
  // row's newest committed ones, read on the device.
  const int64_t P = features_.size(1);
  auto host = torch::zeros({2, R_, P}, torch::kInt64);
  auto h = host.accessor<int64_t, 3>();
  for (int64_t b = 0; b < B_; ++b) {
    const int64_t n = waiting_[size_t(b)], first_cell = rows.committed[size_t(b)] - n;
    for (int64_t s = 0; s < R_ / B_; ++s)
      for (int64_t j = 0; j < P; ++j) {
        h[0][b + s * B_][j] = std::min(N - 1, first_cell + std::min(j, std::max<int64_t>(0, n - 1)));
        h[1][b + s * B_][j] = j < n;
      }
  }
  const auto in = host.to(device);
  const auto cells = in[0], real = in[1].to(torch::kBool);
  const auto tokens = torch::where(real, rows.tokens.repeat({R_ / B_, 1}).gather(1, cells), 0);
  auto out = draft(dcache, features_, tokens, cells, causal_mask(P, device));
  // The pairs stay where they were written: bookkeeping, no data moves.
  std::vector<int64_t> kept;
  for (int64_t row = 0; row < R_; ++row) kept.push_back(waiting_[size_t(row % B_)]);
  const auto real_pairs = real.sum(1);  // [R]: the same counts on the device, so nothing is uploaded
  dcache.shift_lengths(kept, real_pairs);
  // Each row's newest pair: its last real one (the first, in a finished row that has none).
  const auto newest = (real_pairs.unsqueeze(1) - 1).clamp_min(0);
  return out.gather(1, newest.unsqueeze(-1).expand({R_, 1, out.size(2)})).squeeze(1);
}

void EaglePairs::keep_paths(const DecodeRows& rows, std::vector<std::vector<int64_t>> paths,
                            const torch::Tensor& hidden) {
  for (int64_t b = 0; b < B_; ++b)
    if (rows.committed[size_t(b)] >= rows.cells()) paths[size_t(b)].clear();  // finished: nothing more to read
  target_.keep_paths(tcache_, paths);
  int64_t P = 1;
  for (const auto& p : paths) P = std::max<int64_t>(P, int64_t(p.size()));
  // Row b's pairs read the hidden states at its path's entries (padding repeats the last one); their tokens,
  // the path's drafts and the token sampled after them, are the row's newest path.size() committed ones.
  auto idx = torch::zeros({R_, P}, torch::kInt64);
  auto ia = idx.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B_; ++b) {
    const auto& path = paths[size_t(b)];
    waiting_[size_t(b)] = int64_t(path.size());
    if (path.empty()) continue;
    for (int64_t s = 0; s < R_ / B_; ++s)
      for (int64_t j = 0; j < P; ++j) ia[b + s * B_][j] = path[size_t(std::min<int64_t>(j, int64_t(path.size()) - 1))];
  }
  const auto at = idx.to(hidden.device()).unsqueeze(-1).expand({R_, P, hidden.size(2)});
  features_ = gpt_->norm(hidden.gather(1, at));
}

}  // namespace vispec
