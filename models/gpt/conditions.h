// What a batch of samples is conditioned on, in the form the GPT's prefix takes: class ids for a
// class-conditional model; caption features and their mask for a text-conditional one (LlamaGen t2i); the
// prompt's token ids for the LLM families (Chameleon, Janus-Pro, Emu3), with the unconditional stream's own
// prompt beside it (each family's template makes both; models/text/prompt_template.h).
//
// Captions and prompts are laid out as LlamaGen's text-to-image sampler lays out captions (docs/algorithms.md
// "Text conditioning"): each one's L positions fill the LAST L of the model's cls_token_num positions ("left
// padding"), zeros fill the rest, and the mask marks its own positions. The mask then hides the padded
// positions' keys from every query but their own, for the whole decode (KvBlock::visible), and a
// prompt's 1D positions count from its first real token.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace vispec {

enum class ConditionKind { class_id, caption, prompt };

struct Conditions {
  torch::Tensor class_ids;                          // [B] int64: class-conditional models
  torch::Tensor captions;                           // [B, C, caption_dim] float32: text-conditional models, left-padded
  torch::Tensor caption_mask;                       // [B, C] bool: true at a caption's own positions
  torch::Tensor prompt_ids, prompt_mask;            // [B, C] int64 / bool: prompted models, left-padded
  torch::Tensor null_prompt_ids, null_prompt_mask;  // the unconditional stream's prompt, likewise

  ConditionKind kind() const {
    return captions.defined()     ? ConditionKind::caption
           : prompt_ids.defined() ? ConditionKind::prompt
                                  : ConditionKind::class_id;
  }
  bool text() const { return captions.defined(); }
  int64_t size() const {
    return captions.defined() ? captions.size(0) : prompt_ids.defined() ? prompt_ids.size(0) : class_ids.size(0);
  }
  // The conditions of samples `index` (each < size()), in that order.
  Conditions select(const std::vector<int64_t>& index) const;
};

Conditions class_conditions(const std::vector<int64_t>& class_ids);
// Per-caption token features [L_b, caption_dim] (L_b <= C) -> left-padded captions and mask over C positions.
Conditions caption_conditions(const std::vector<torch::Tensor>& features, int64_t C);
// Per-sample token ids of the prompt and of the unconditional stream's prompt (each at most C long) ->
// left-padded ids and masks over C positions.
Conditions prompt_conditions(const std::vector<std::vector<int64_t>>& prompts,
                             const std::vector<std::vector<int64_t>>& null_prompts, int64_t C);

}  // namespace vispec
