#include "decoding/common/sampler.h"

#include <vector>

#include "core/check.h"
#include "kernels/cfg_mix.h"
#include "kernels/draws.h"
#include "kernels/note_nonfinite.h"
#include "kernels/sample_next.h"
#include "kernels/softmax_draw.h"
#include "kernels/kernel_check.h"

namespace vispec {

torch::Tensor cfg_combine(const torch::Tensor& logits, double scale) {
  const int64_t B = logits.size(0) / 2;
  VISPEC_ASSERT(logits.size(0) == 2 * B, "CFG needs [cond; uncond] rows");
  return kernels::cfg_mix(logits, scale);  // u + scale (c - u) in float32, in one pass where the operator runs
}

torch::Tensor apply_top_k(const torch::Tensor& logits, int64_t k) {
  if (k <= 0 || k >= logits.size(-1)) return logits;
  auto kth = std::get<0>(logits.topk(k, -1)).narrow(-1, k - 1, 1);
  return logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
}

torch::Tensor apply_top_p(const torch::Tensor& logits, double p) {
  if (p >= 1.0) return logits;
  // Ascending sort: drop the tokens whose cumulative mass from the bottom is <= 1 - p; the most likely stays.
  auto [sorted, order] = logits.sort(-1, /*descending=*/false);
  auto cum = torch::softmax(sorted, -1).cumsum(-1);
  auto remove_sorted = cum <= (1.0 - p);
  remove_sorted.narrow(-1, remove_sorted.size(-1) - 1, 1).fill_(false);
  auto remove = torch::zeros_like(remove_sorted).scatter(-1, order, remove_sorted);
  return logits.masked_fill(remove, -std::numeric_limits<float>::infinity());
}

namespace nonfinite_watch {
namespace {
constexpr int64_t kSources = 2;
// Every source's flag, [kSources] bool on the device of the outputs, made at the first note and from then on
// only written in place, and its 0-dim views, one per source (models/gpt/step_graph.h: replays keep addresses).
thread_local torch::Tensor flags;
thread_local std::vector<torch::Tensor> views;
}  // namespace
const torch::Tensor& flag_on(const torch::Device& device, Source source) {
  if (!flags.defined() || flags.device() != device) {
    flags = torch::zeros({kSources}, torch::TensorOptions().dtype(torch::kBool).device(device));
    views.clear();
    for (int64_t s = 0; s < kSources; ++s) views.push_back(flags.select(0, s));
  }
  return views[size_t(source)];
}
void note(const torch::Tensor& x, Source source) {
  kernels::note_nonfinite(x, flag_on(x.device(), source));  // one kernel where the operator runs, else four
}
void reset() {
  if (flags.defined()) flags.fill_(false);
}
bool seen(Source source) {
  if (!flags.defined()) return false;
  return flags.select(0, int64_t(source)).item<bool>();
}
}  // namespace nonfinite_watch

torch::Tensor target_probs(const torch::Tensor& logits, const SamplingParams& params) {
  auto l = logits.to(torch::kFloat32);
  nonfinite_watch::note(l, nonfinite_watch::Source::kLogits);
  if (params.greedy()) {
    auto idx = l.argmax(-1, /*keepdim=*/true);
    return torch::zeros_like(l).scatter_(-1, idx, 1.0);
  }
  if (params.temperature != 1.0) l = l / std::max(params.temperature, 1e-5);  // x / 1 is x: no kernel for it
  l = apply_top_k(l, params.top_k);
  l = apply_top_p(l, params.top_p);
  return torch::softmax(l, -1);
}

torch::Tensor greedy_tokens(const torch::Tensor& logits) {
  const auto l = logits.to(torch::kFloat32);
  nonfinite_watch::note(l, nonfinite_watch::Source::kLogits);
  return l.argmax(-1);
}

torch::Tensor next_tokens(const torch::Tensor& logits, const SamplingParams& params, const torch::Tensor& u) {
  if (logits.dim() == 2 && logits.scalar_type() == torch::kFloat32 && kernels::use_fused(logits)) {
    const bool ready = u.device() == logits.device() && u.scalar_type() == torch::kFloat64;
    return kernels::sample_next(logits, ready ? u : u.to(logits.device(), torch::kFloat64), params.temperature,
                                params.top_k, params.top_p, nonfinite_watch::flag_on(logits.device()));
  }
  return params.greedy() ? greedy_tokens(logits) : sample_from_probs(target_probs(logits, params), u);
}

std::pair<torch::Tensor, torch::Tensor> probs_and_draw(const torch::Tensor& logits, const SamplingParams& params,
                                                       const torch::Tensor& u) {
  const int64_t V = logits.size(-1);
  const bool filters = (params.top_k > 0 && params.top_k < V) || params.top_p < 1.0;
  if (!params.greedy() && !filters && logits.scalar_type() == torch::kFloat32 && kernels::use_fused(logits)) {
    const auto [probs, tokens] =
        kernels::softmax_draw(logits.reshape({-1, V}), u.to(logits.device(), torch::kFloat64).reshape(-1),
                              params.temperature, nonfinite_watch::flag_on(logits.device()));
    return {probs.view(logits.sizes()), tokens.view(u.sizes())};
  }
  const auto probs = target_probs(logits, params);
  return {probs, sample_from_probs(probs.reshape({-1, V}), u.reshape(-1)).view(u.sizes())};
}

torch::Tensor sample_from_probs(const torch::Tensor& probs, const torch::Tensor& u) {
  auto cdf = probs.to(torch::kFloat64).cumsum(-1);  // [B, V]
  auto target = u.to(cdf.device(), torch::kFloat64).unsqueeze(-1) * cdf.narrow(-1, cdf.size(-1) - 1, 1);
  // The first index whose cdf exceeds u * total: the count of cdf values at or below it, which a non-decreasing cdf
  // holds as a prefix (one search where a comparison and a sum were two kernels). A NaN cdf or target, which the
  // samplers' non-finite watch fails, would give V here and 0 there: either is clamped to a token.
  auto idx = torch::searchsorted(cdf, target, /*out_int32=*/false, /*right=*/true).squeeze(-1);
  return idx.clamp_max(probs.size(-1) - 1);
}

int64_t sample_token(const torch::Tensor& probs, double u) {
  return sample_from_probs(probs.unsqueeze(0), torch::full({1}, u, torch::kFloat64)).item<int64_t>();
}

std::pair<torch::Tensor, torch::Tensor> draw_without_replacement(const torch::Tensor& q, const torch::Tensor& u) {
  if (kernels::use_fused(q.device(), torch::kFloat32)) {  // one operator, where the formula below is 13 per draw
    const auto [tokens, probs] = kernels::draw_without_replacement(q, u.to(q.device(), torch::kFloat64));
    return {tokens, probs};
  }
  const int64_t n = u.size(-1), V = q.size(-1);
  auto left = q.to(torch::kFloat64).clone();
  const auto uu = u.to(left.device(), torch::kFloat64);
  std::vector<torch::Tensor> tokens, probs;
  for (int64_t j = 0; j < n; ++j) {
    const auto total = left.sum(-1, true);  // [B, M, 1]
    // The first token whose cumulative mass exceeds u * total.
    const auto idx = (left.cumsum(-1) <= uu.narrow(-1, j, 1) * total).sum(-1, true).clamp_max(V - 1);
    const auto prob = torch::where(total > 0, left.gather(-1, idx) / total, torch::zeros_like(total));
    left.scatter_(-1, idx, 0.0);
    tokens.push_back(idx);
    probs.push_back(prob);
  }
  return {torch::cat(tokens, -1), torch::cat(probs, -1)};
}

}  // namespace vispec
