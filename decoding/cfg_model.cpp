#include "decoding/cfg_model.h"

namespace vispec {

CfgOutput CfgModel::combine(const GptOutput& out) const {
  return {guided() ? cfg_combine(out.logits, scale_) : out.logits, out.hidden};
}

CfgOutput CfgModel::prefill(KvCache& cache, const Conditions& conditions) {
  auto cond = gpt_->embed(conditions);
  if (guided()) cond = torch::cat({cond, gpt_->null_condition(conditions.size())});
  auto visible = gpt_->condition_visibility(conditions);
  if (visible.defined()) visible = twice(visible);
  return combine(gpt_->prefill(cache, cond, visible));
}

CfgOutput CfgModel::decode_block(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                                 const torch::Tensor& block_mask) {
  const auto device = gpt_->tok_embeddings->weight.device();
  auto mask = block_mask.dim() == 3 ? twice(block_mask) : block_mask;
  return combine(gpt_->decode_block(cache, twice(tokens.to(device)), twice(positions.to(device)), mask));
}

void CfgModel::keep(KvCache& cache, int64_t row, const std::vector<int64_t>& block_indices) const {
  cache.keep(row, block_indices);
  if (guided()) cache.keep(row + cache.batch() / 2, block_indices);
}

void CfgModel::truncate(KvCache& cache, int64_t row, int64_t length) const {
  cache.truncate(row, length);
  if (guided()) cache.truncate(row + cache.batch() / 2, length);
}

}  // namespace vispec
