// ZipAR (He et al., ICML 2025) with a fixed window s, as its LlamaGen code runs it (docs/algorithms.md
// "ZipAR"):
//
//   row 0      decoded autoregressively; row 1 starts when row 0 is complete
//   row r + 1  starts once row r has s tokens (r >= 1)
//   a step     ONE forward feeding the newest token of every active row at its raster position, then one
//              sampled token for every active row: several rows advance per forward
//   start      a row's first token is predicted from the cell before it, the last cell of the row above. If
//              that row is unfinished, the code feeds a placeholder there (AUX): the newest token of the row
//              two above. When the row above finishes, its real last token is fed at that cell (its output is
//              not used) and replaces the placeholder for every later query.
//   attention  causal by raster position over the entries written so far. The public code leaves unwritten
//              cells as zero keys (logit 0, value 0) in a cache indexed by position; ours sees only written
//              entries (unwritten cells masked out), a deviation the source notes allow.
//   row ends   on a model whose rows end in an end-of-line token (Lumina-mGPT, Emu3) a fed row-ending cell,
//              placeholder or real, brings its end-of-line entry (models/gpt/sequence_layout.h), which sees what
//              the cell sees and predicts the next row's first token; it lives and dies with the cell's token.
// Lossy by schedule: a token is sampled before the cells right of the one above it exist. Randomness per
// (seed, sample id, raster index, kSample), as AR's: with s = W the schedule is AR's and so are the tokens.
#include "decoding/zipar.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/sampler.h"
#include "models/gpt/sequence_layout.h"

namespace vispec {

int64_t zipar_forwards(int64_t height, int64_t width, int64_t window) {
  const int64_t s = std::clamp<int64_t>(window, 1, width);
  return height == 1 ? width : 2 * width + (height - 2) * s;
}

namespace {
// One input of a step: the token at raster cell `position` of every sample, and the row whose next token its
// output gives (-1: the output is not used).
struct Feed {
  int64_t position;
  int64_t predicts_row;
  bool placeholder;
  int64_t source;  // the raster index whose token is fed (the cell itself, or the placeholder's source)
};

// The host's schedule, which does not depend on the tokens: which rows have started, how many tokens each has,
// and the raster position of every committed cache entry in the cache's order (the condition's: -1; a
// placeholder's once its cell got its real token: kUnseen, as the slots after the entries).
class RowSchedule {
 public:
  static constexpr int64_t kUnseen = std::numeric_limits<int64_t>::max();
  // A step: its feeds in raster order, and per output (a feed's index) the cell its sampled token fills.
  struct Step {
    std::vector<Feed> feeds;
    std::vector<int64_t> outputs, cells;
  };

  // H x W cells, window s, the cache holding prefix_entries entries of the condition; token 0 sampled.
  RowSchedule(int64_t H, int64_t W, int64_t s, int64_t prefix_entries)
      : H_(H), W_(W), s_(s), entries_(size_t(prefix_entries), -1), count_(size_t(H), 0), started_(size_t(H), 0) {
    count_[0] = 1;
    started_[0] = 1;
  }
  bool done() const { return count_[size_t(H_ - 1)] == W_; }

  // The next step: every active row's newest cell (a row that has not started yet, the cell before it: the row
  // above's last, real or a placeholder), and the real last cells of the rows the last step completed. The rows'
  // counts advance by the tokens it samples, and a real token replaces its cell's placeholder for every query.
  Step next() {
    Step step;
    auto& feeds = step.feeds;
    for (int64_t r = 0; r < H_; ++r) {
      const auto n = count_[size_t(r)];
      if (!started_[size_t(r)] || n == W_) continue;
      if (n > 0) {
        feeds.push_back({r * W_ + n - 1, r, false, r * W_ + n - 1});
      } else if (count_[size_t(r - 1)] == W_) {  // the row above is complete: its real last token
        feeds.push_back({r * W_ - 1, r, false, r * W_ - 1});
        finished_.erase(std::remove(finished_.begin(), finished_.end(), r - 1), finished_.end());
      } else {  // the placeholder: the newest token of the row two above, at the last cell of the row above
        feeds.push_back({r * W_ - 1, r, true, (r - 2) * W_ + count_[size_t(r - 2)] - 1});
      }
    }
    for (int64_t r : finished_) feeds.push_back({(r + 1) * W_ - 1, -1, false, (r + 1) * W_ - 1});
    finished_.clear();
    std::sort(feeds.begin(), feeds.end(), [](const Feed& a, const Feed& b) { return a.position < b.position; });
    for (const auto& f : feeds)
      if (!f.placeholder) std::replace(entries_.begin(), entries_.end(), f.position, kUnseen);
    for (size_t i = 0; i < feeds.size(); ++i) {
      const int64_t r = feeds[i].predicts_row;
      if (r < 0) continue;
      step.outputs.push_back(int64_t(i));
      step.cells.push_back(r * W_ + count_[size_t(r)]);
      started_[size_t(r)] = 1;
      if (++count_[size_t(r)] == W_ && r + 1 < H_) finished_.push_back(r);
    }
    return step;
  }

  // What the step uploads at once: the fed cells' sources and positions, the outputs that give a row's next
  // token and its cell, and the raster position of every one of the cache's C slots.
  std::vector<int64_t> inputs(const Step& step, int64_t C) const {
    std::vector<int64_t> plan;
    for (const auto& f : step.feeds) plan.push_back(f.source);
    for (const auto& f : step.feeds) plan.push_back(f.position);
    for (const auto* part : {&step.outputs, &step.cells, &entries_})
      plan.insert(plan.end(), part->begin(), part->end());
    plan.resize(2 * step.feeds.size() + 2 * step.outputs.size() + size_t(C), kUnseen);
    return plan;
  }

  // The step's entries, now in the cache, and the row that may start: row 1 once row 0 is complete, row r + 1
  // once row r has s tokens, one row per step (the row below waits for this one's s tokens). A fed token that
  // ends a row brought its end-of-line entry into the cache right after it (models/gpt/sequence_layout.h): the same
  // cell for every rule above, so it lives and dies with its token.
  void kept(const Step& step, bool row_ends) {
    for (const auto& f : step.feeds) {
      entries_.push_back(f.position);
      if (row_ends && ends_row(f.position, W_, H_ * W_)) entries_.push_back(f.position);
    }
    for (int64_t r = 0; r + 1 < H_; ++r)
      if (!started_[size_t(r + 1)] && count_[size_t(r)] >= (r == 0 ? W_ : s_)) {
        started_[size_t(r + 1)] = 1;
        break;
      }
  }

 private:
  int64_t H_, W_, s_;
  std::vector<int64_t> entries_, count_;
  std::vector<char> started_;
  std::vector<int64_t> finished_;  // rows completed by the last step, whose last cell is not written yet
};
}  // namespace

DecodeResult ZipArDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  const auto& config = target_.gpt()->config();
  const int64_t B = request.batch(), W = config.grid_size, H = config.grid_size, N = H * W;
  const int64_t s = std::clamp<int64_t>(window_, 1, W);
  const auto device = target_.gpt()->device();
  const bool row_ends = target_.gpt()->config().row_ends();
  auto cache = target_.make_cache(B, H + 1, /*static_steps=*/true);  // room for the placeholders
  const int64_t C = cache.capacity();
  // Tokens and every cell's uniform live on the device: a step's inputs are gathered there and its samples
  // written there, so the loop never waits for the host (the schedule does not depend on the tokens).
  auto rows = graphs_.rows(request, N, 0, device);
  const auto table = uniform_table(request.seed, request.sample_ids, uint32_t(N), Purpose::kSample);
  const auto u = graphs_.state(rows, "zipar_uniforms", {B, N}, table.options().device(device));
  u.copy_(table);
  rows.start(target_.prefill(cache, request.conditions).logits, params_);  // token 0, as AR draws it
  cache.advance();
  const auto* pooled = target_.pooled_lengths(cache);
  RowSchedule schedule(H, W, s, cache.length(0));
  int64_t forwards = 1;

  while (rows.next_iteration()) {  // until the last row is complete (then every row's `committed` is the image)
    const auto plan = schedule.next();
    const int64_t T = int64_t(plan.feeds.size()), K = int64_t(plan.outputs.size());
    auto& inputs = step_inputs_[{T, K, C, int64_t(device.type()), int64_t(device.index())}];
    if (!inputs.defined())
      inputs = torch::empty({2 * T + 2 * K + C}, torch::TensorOptions(torch::kInt64).device(device));
    upload_to(inputs, torch::tensor(schedule.inputs(plan, C), torch::kInt64));

    // The step on the device: one forward feeding every active row's newest cell, each query seeing the
    // committed entries at earlier raster positions, then one sampled token per row.
    const auto step = [&] {
      const auto from = inputs.narrow(0, 2 * T, K), to = inputs.narrow(0, 2 * T + K, K);
      const auto fed = inputs.narrow(0, T, T);
      const auto seen = inputs.narrow(0, 2 * T + 2 * K, C).view({1, C}).lt(fed.view({T, 1}));  // [T, C]
      const auto out = target_.decode_block(cache, rows.tokens.index_select(1, inputs.narrow(0, 0, T)),
                                            fed.unsqueeze(0).expand({B, T}), causal_mask(T, device), seen);
      cache.advance();
      const auto logits = out.logits.index_select(1, from);  // [B, K, V]
      const auto next =
          next_tokens(logits.reshape({B * K, logits.size(2)}), params_, u.index_select(1, to).reshape(-1));
      rows.tokens.index_copy_(1, to, next.view({B, K}));
    };
    auto after = cache.lengths();  // the step keeps its T entries in every row
    for (auto& n : after) n += T;
    graphs_.run(rows, {B, T, K, cache.bucket_for(T)}, {pooled}, {&cache}, step, {after});
    ++forwards;
    schedule.kept(plan, row_ends);
    if (schedule.done()) std::fill(rows.committed.begin(), rows.committed.end(), N);
  }
  VISPEC_ASSERT(forwards == zipar_forwards(H, W, s), "ZipAR took ", forwards, " forwards, schedule says ",
                zipar_forwards(H, W, s));
  auto result = rows.result();
  for (auto& st : result.stats) st.target_forwards = forwards;
  return result;
}

namespace {
struct ZipArSettings {
  int64_t window = 8;  // s: columns a row runs ahead of the row below it
};

DecoderEntry zipar_entry() {
  DecoderEntry e;
  e.name = "zipar";
  e.summary = "ZipAR: rows decoded in parallel once the row above is `window` tokens ahead (training-free)";
  e.read = [](DecoderFields& f, DecoderConfig& c) {
    c.method = ZipArSettings{f.whole("window", ZipArSettings{}.window, 1, 1024)};
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    return std::make_unique<ZipArDecoder>(m.target, c.sampling, c.settings<ZipArSettings>().window);
  };
  return e;
}
const DecoderRegistration kZipArRegistration(zipar_entry());
}  // namespace

}  // namespace vispec
