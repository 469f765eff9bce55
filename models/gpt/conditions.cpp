#include "models/gpt/conditions.h"

#include "core/check.h"

namespace vispec {

Conditions Conditions::select(const std::vector<int64_t>& index) const {
  const auto rows = torch::tensor(index, torch::kInt64);
  const auto pick = [&](const torch::Tensor& t) {
    return t.defined() ? t.index_select(0, rows.to(t.device())) : torch::Tensor();
  };
  Conditions c;
  c.class_ids = pick(class_ids);
  c.captions = pick(captions);
  c.caption_mask = pick(caption_mask);
  c.prompt_ids = pick(prompt_ids);
  c.prompt_mask = pick(prompt_mask);
  c.null_prompt_ids = pick(null_prompt_ids);
  c.null_prompt_mask = pick(null_prompt_mask);
  return c;
}

Conditions class_conditions(const std::vector<int64_t>& class_ids) {
  Conditions c;
  c.class_ids = torch::tensor(class_ids, torch::kInt64);
  return c;
}

Conditions caption_conditions(const std::vector<torch::Tensor>& features, int64_t C) {
  VISPEC_ASSERT(!features.empty(), "no captions");
  const int64_t B = int64_t(features.size()), D = features[0].size(-1);
  Conditions c;
  c.captions = torch::zeros({B, C, D}, torch::kFloat32);
  c.caption_mask = torch::zeros({B, C}, torch::kBool);
  for (int64_t b = 0; b < B; ++b) {
    const auto& f = features[size_t(b)];
    const int64_t L = f.size(0);
    VISPEC_ASSERT(f.dim() == 2 && f.size(1) == D && L <= C, "caption features of shape ", f.sizes(), " for ", C,
                  " positions of width ", D);
    c.captions[b].narrow(0, C - L, L).copy_(f);
    c.caption_mask[b].narrow(0, C - L, L).fill_(true);
  }
  return c;
}

namespace {
// ids [B, C] (padding 0) and mask [B, C], each sequence in the last positions.
std::pair<torch::Tensor, torch::Tensor> left_padded(const std::vector<std::vector<int64_t>>& seqs, int64_t C) {
  const int64_t B = int64_t(seqs.size());
  auto ids = torch::zeros({B, C}, torch::kInt64);
  auto mask = torch::zeros({B, C}, torch::kBool);
  for (int64_t b = 0; b < B; ++b) {
    const auto& s = seqs[size_t(b)];
    const int64_t L = int64_t(s.size());
    VISPEC_CHECK(L >= 1 && L <= C, "a prompt of ", L, " tokens does not fit the model's ", C,
                 " prefix positions (gpt.cls_token_num)");
    ids[b].narrow(0, C - L, L).copy_(torch::tensor(s, torch::kInt64));
    mask[b].narrow(0, C - L, L).fill_(true);
  }
  return {ids, mask};
}
}  // namespace

Conditions prompt_conditions(const std::vector<std::vector<int64_t>>& prompts,
                             const std::vector<std::vector<int64_t>>& null_prompts, int64_t C) {
  VISPEC_ASSERT(!prompts.empty() && prompts.size() == null_prompts.size(), prompts.size(), " prompts with ",
                null_prompts.size(), " unconditional prompts");
  Conditions c;
  std::tie(c.prompt_ids, c.prompt_mask) = left_padded(prompts, C);
  std::tie(c.null_prompt_ids, c.null_prompt_mask) = left_padded(null_prompts, C);
  return c;
}

}  // namespace vispec
