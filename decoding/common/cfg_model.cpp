#include "decoding/common/cfg_model.h"

namespace vispec {

CfgOutput CfgModel::combine(const GptOutput& out) const {
  return {guided() ? cfg_combine(out.logits, scale_) : out.logits, out.hidden};
}

torch::Tensor CfgModel::output_logits(const torch::Tensor& features) {
  auto logits = gpt_->image_logits(features).to(torch::kFloat32);
  return guided() ? cfg_combine(logits, scale_) : logits;
}

CfgOutput CfgModel::prefill(KvCache& cache, const Conditions& conditions) {
  auto prefix = gpt_->prefix(conditions);
  if (guided()) {
    const auto null = gpt_->prefix(conditions, /*unconditional=*/true);
    prefix.embeddings = torch::cat({prefix.embeddings, null.embeddings});
    if (prefix.visible.defined()) prefix.visible = torch::cat({prefix.visible, null.visible});
  }
  return combine(gpt_->prefill(cache, prefix.embeddings, prefix.visible));
}

CfgOutput CfgModel::prefill_rows(KvCache& cache, const std::vector<int64_t>& rows, const Conditions& conditions) {
  auto prefilled = gpt_->make_prefill_cache(cache.batch(), cache);
  const auto out = prefill(prefilled, conditions);
  prefilled.advance();
  cache.take_rows(prefilled, rows, guided() ? cache.batch() / 2 : cache.batch());
  return out;
}

KvCache CfgModel::make_cache(int64_t batch, int64_t extra, bool static_steps) const {
  if (static_steps && !gpt_->config().row_ends()) return statics_->make_cache(gpt_, rows(batch), extra);
  return gpt_->make_cache(rows(batch), extra);
}

CfgOutput CfgModel::decode_block(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                                 const torch::Tensor& block_mask, const torch::Tensor& committed) {
  const auto device = gpt_->device();
  const auto forward = [&](const torch::Tensor& t, const torch::Tensor& p, const torch::Tensor& m,
                           const torch::Tensor& c) {
    const auto mask = m.defined() && m.dim() == 3 ? twice(m) : m;
    const auto seen = c.defined() && c.dim() == 3 ? twice(c) : c;
    const auto out = combine(gpt_->decode_block(cache, twice(t.to(device)), twice(p.to(device)), mask, seen));
    return GptOutput{out.logits, out.hidden};
  };
  if (!statics_->owns(cache)) {
    const auto out = forward(tokens, positions, block_mask, committed);
    return {out.logits, out.hidden};
  }
  const auto out = statics_->forward(cache, tokens, positions, block_mask, committed, forward);
  return {out.logits, out.hidden};
}

}  // namespace vispec
