#include "decoding/common/eagle_drafter_state.h"

#include <algorithm>

#include "core/check.h"

namespace vispec {

EagleDrafterState::EagleDrafterState(CfgModel& target, KvCache& tcache, EagleDrafter drafter,
                                     ForwardGraphs& drafter_steps, int64_t batch, int64_t path_width)
    : target_(target), tcache_(tcache), gpt_(target.gpt()), drafter_(std::move(drafter)), steps_(drafter_steps),
      B_(batch), R_(target.rows(batch)), W_(path_width) {}

KvCache EagleDrafterState::drafter_cache(int64_t extra) {
  return steps_.make_cache(R_, gpt_->config().image_tokens() + extra,
                           [&] { return drafter_->make_cache(R_, extra, /*static_lengths=*/true); });
}

torch::Tensor EagleDrafterState::draft(KvCache& dcache, const torch::Tensor& features, const torch::Tensor& tokens,
                                       const torch::Tensor& cells, const torch::Tensor& mask) {
  VISPEC_ASSERT(
      features.size(0) == R_ && tokens.size(0) == B_ && cells.size(0) == B_ && (mask.dim() == 2 || mask.size(0) == B_),
      "EagleDrafterState::draft: features of ", features.size(0), " rows, tokens, cells and mask of ", tokens.size(0),
      ", ", cells.size(0), " and ", mask.sizes(), " for ", B_, " samples in ", R_, " rows");
  const int64_t T = tokens.size(1);
  return steps_.forward(
      dcache, T, block_width(T, mask), {features, tokens, cells, mask},
      [&](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{drafter_(in[0], drafter_->embed(in[1], *gpt_), in[2], in[3], &dcache)};
      },
      /*per_sample=*/{false, true, true, mask.dim() == 3})[0];
}

void EagleDrafterState::prepare(DecodeState& rows, IterationGraphs& graphs) {
  const auto& w = gpt_->tok_embeddings->weight;
  features_ = graphs.state(rows, "eagle_features", {R_, W_, gpt_->config().dim}, w.options());
  waiting_device_ = graphs.state(rows, "eagle_waiting", {B_}, w.options().dtype(torch::kInt64));
}

void EagleDrafterState::start(const SamplingParams& params, const RowFill& fill, DecodeState& rows, KvCache& dcache) {
  const auto pre = target_.prefill_rows(tcache_, fill.rows, fill.conditions);
  rows.start(fill, pre.logits, params);
  // The rows' first pair, the first token's, repeated as padding, in every stream's rows.
  const auto first = gpt_->norm(pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1));  // [R, 1, D]
  const int64_t streams = R_ / B_;
  std::vector<int64_t> stream_rows, lengths(size_t(B_), 0);
  for (int64_t st = 0; st < streams; ++st)
    for (int64_t b : fill.rows) stream_rows.push_back(st * B_ + b);
  const auto device = waiting_device_.device();
  const auto taken = torch::tensor(stream_rows, torch::kInt64).to(device);
  features_.index_copy_(0, taken, first.index_select(0, taken).expand({-1, W_, -1}));
  waiting_device_.index_fill_(0, torch::tensor(fill.rows, torch::kInt64).to(device), 1);
  // The drafter forgets the rows' last samples: it reads a new sample's pairs from its first.
  for (int64_t b : fill.rows) lengths[size_t(b)] = -dcache.length(b);
  dcache.advance(lengths);
  for (int64_t b : fill.rows) rows.stats_of(b).target_forwards = 1;
}

torch::Tensor EagleDrafterState::catch_up(KvCache& dcache, const DecodeState& rows) {
  const int64_t N = rows.cells(), W = W_, S = R_ / B_;
  // Every row's waiting pairs as one block of W, padded at the end; padding entries are not kept. The raster
  // cells of the pairs, n - waiting .. n - 1 (padding repeats the last), their tokens the row's newest committed
  // ones: all from device counts, so the block is the same step whatever was accepted.
  const auto j = torch::arange(W, torch::TensorOptions().dtype(torch::kInt64).device(gpt_->device())).view({1, W});
  const auto n = waiting_device_.view({B_, 1});
  // Tokens and cells per sample: every CFG stream reads the same (draft() repeats them in its input copy).
  const auto cells = (rows.n.view({B_, 1}) - n + torch::minimum(j, (n - 1).clamp_min(0))).clamp_max(N - 1);
  const auto real = j.lt(n);  // [B, W]
  const auto tokens = torch::where(real, rows.tokens.gather(1, cells), 0);
  auto out = draft(dcache, features_, tokens, cells, causal_mask(W, gpt_->device()));
  // The pairs stay where they were written: bookkeeping, no data moves. The device counts the real pairs; the
  // host plans with the whole block, whatever was accepted, until the iteration's read settles it.
  const auto pairs = real.sum(1);  // [B]
  dcache.advance(pairs);
  // Each row's newest pair: its last real one (the first, in a finished row that has none), in every stream.
  const auto newest = (pairs - 1).clamp_min(0).view({1, B_, 1, 1}).expand({S, B_, 1, out.size(2)});
  return out.view({S, B_, W, out.size(2)}).gather(2, newest).view({R_, out.size(2)});
}

void EagleDrafterState::keep_paths(const DecodeState& rows, const torch::Tensor& path, const torch::Tensor& hidden) {
  // The walk's verdict is levels + 2 wide, its last column -1 (a path holds the root and at most `levels`
  // accepted nodes): W_ = levels + 1 columns hold every path.
  VISPEC_ASSERT(path.size(0) == B_ && path.size(1) <= W_ + 1, "EagleDrafterState: paths of ", path.size(1),
                " entries for a width of ", W_);
  const auto finished = rows.n.ge(rows.cells()).view({B_, 1});  // nothing more to read
  // The paths W wide: -1 past each end, and in finished rows.
  auto p = path.size(1) < W_ ? torch::cat({path, torch::full({B_, W_ - path.size(1)}, -1, path.options())}, 1)
                             : path.narrow(1, 0, W_);
  p = p.masked_fill(finished, -1);
  tcache_.keep_paths(p);
  waiting_device_.copy_(p.ge(0).sum(1));
  // Row b's pairs read the hidden states at its path's entries (padding repeats the last one); their tokens,
  // the path's drafts and the token sampled after them, are the row's newest waiting ones.
  const auto j = torch::arange(W_, p.options()).view({1, W_});
  const auto idx = p.gather(1, torch::minimum(j, (waiting_device_.view({B_, 1}) - 1).clamp_min(0))).clamp_min(0);
  const auto at = idx.repeat({R_ / B_, 1}).unsqueeze(-1).expand({R_, W_, hidden.size(2)});
  features_.copy_(gpt_->norm(hidden.gather(1, at)));
}

StepKey EagleDrafterState::iteration_key(const KvCache& dcache, const StepKey& shape, int64_t tree_nodes,
                                         const std::vector<int64_t>& drafter_widths) const {
  // The tree blocks are planned after the catch-up has counted W_ entries on the host.
  StepKey key{tcache_.bucket_for(tree_nodes), dcache.bucket_for(W_)};
  for (int64_t width : drafter_widths) key.push_back(dcache.bucket_for(W_ + width));
  key.insert(key.end(), shape.begin(), shape.end());
  return key;
}

}  // namespace vispec
