// A prompted model's prompt: a caption from the prompt file, wrapped in the family's template and tokenised by
// the family's own tokenizer (models/text/bpe_tokenizer.h), and the unconditional stream's prompt beside it: a fixed
// text (Lumina-mGPT's begin-of-image and size tokens, Anole's BOS and begin-of-image, Emu3's negative prompt)
// or the conditional ids with everything between the first and the last replaced by a pad token (Janus-Pro).
// Special tokens are written in the template as text and found by the tokenizer as it finds them in any text.
// Plain C++, no torch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/text/bpe_tokenizer.h"
#include "models/model_config.h"

namespace vispec {

struct PromptIds {
  std::vector<int64_t> prompt, null_prompt;
};

class PromptTemplate {
 public:
  // Loads the tokenizer and checks it against the GPT: every id below gpt.text_vocab_size, the pad token known,
  // and where the vocabulary names image tokens (Chameleon's IMGIMG<letters>Z), each one at
  // gpt.image_token_offset + its code. Throws an Error naming the file and field.
  // `prompt`: the model's prompt section, or MuLo-SD's drafter's (the same tokenizer, its own template).
  PromptTemplate(const ModelConfig& model, const PromptConfig& prompt);
  // Both streams' ids for one caption; "" if they fit the model's prefix (gpt.cls_token_num), else why not.
  std::string judge(const std::string& caption, PromptIds& ids) const;
  PromptIds operator()(const std::string& caption) const;  // throws judge()'s message
  const BpeTokenizer& tokenizer() const { return *tokenizer_; }

 private:
  PromptConfig config_;
  int64_t prefix_ = 0;  // gpt.cls_token_num
  std::unique_ptr<BpeTokenizer> tokenizer_;
  std::vector<int64_t> unconditional_;
  int64_t pad_ = -1;
};

// The template of `model` (or `prompt`), made once per process and config (planning and every unit's read
// judge the same lines with it). Thread-safe.
const PromptTemplate& prompt_template_for(const ModelConfig& model, const PromptConfig& prompt);
inline const PromptTemplate& prompt_template_for(const ModelConfig& model) {
  return prompt_template_for(model, model.prompt);
}

}  // namespace vispec
