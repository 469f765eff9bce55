#include "models/text/prompt_template.h"

#include <map>
#include <mutex>

#include "core/check.h"

namespace vispec {

namespace {

// Chameleon spells image code c as "IMGIMG" + c's decimal digits as letters (0 -> A .. 9 -> J) + "Z"; -1 for
// any other token.
int64_t chameleon_image_code(const std::string& token) {
  const std::string head = "IMGIMG";
  if (token.size() < head.size() + 2 || token.compare(0, head.size(), head) != 0 || token.back() != 'Z') return -1;
  int64_t code = 0;
  for (size_t i = head.size(); i + 1 < token.size(); ++i) {
    if (token[i] < 'A' || token[i] > 'J') return -1;
    code = code * 10 + (token[i] - 'A');
  }
  return code;
}

}  // namespace

PromptTemplate::PromptTemplate(const ModelConfig& model, const PromptConfig& prompt)
    : config_(prompt), prefix_(model.gpt.cls_token_num) {
  VISPEC_CHECK(config_.present, model.file,
               ": prompt: a prompted model (gpt.text_vocab_size) needs a prompt "
               "section: its tokenizer and template (docs/model_families.md)");
  tokenizer_ = std::make_unique<BpeTokenizer>(
      config_.tokenizer_json.empty()
          ? BpeTokenizer::from_emu3_tiktoken(config_.emu3_tiktoken, config_.emu3_vision_tokens)
          : BpeTokenizer::from_tokenizer_json(config_.tokenizer_json));
  const auto& gpt = model.gpt;
  VISPEC_CHECK(tokenizer_->vocab_size() <= gpt.text_vocab_size, tokenizer_->file(), ": ids up to ",
               tokenizer_->vocab_size() - 1, " but ", model.file, ": gpt.text_vocab_size is ", gpt.text_vocab_size,
               " (the tokenizer of another model?)");
  for (const auto& [bytes, id] : tokenizer_->byte_vocab()) {
    const int64_t code = chameleon_image_code(bytes);
    if (code < 0) continue;
    VISPEC_CHECK(code < gpt.vocab_size && id == gpt.image_token_offset + code, tokenizer_->file(),
                 ": model.vocab: ", bytes, " (image code ", code, ") has id ", id, ", but ", model.file,
                 ": gpt.image_token_offset + code is ", gpt.image_token_offset + code, " (of vocab_size ",
                 gpt.vocab_size, " codes)");
  }
  if (!config_.unconditional_pad.empty()) {
    pad_ = tokenizer_->token_id(config_.unconditional_pad);
    VISPEC_CHECK(pad_ >= 0, config_.where, ".unconditional_pad: the tokenizer has no token '",
                 config_.unconditional_pad, "'");
  } else {
    unconditional_ = tokenizer_->encode(config_.unconditional);
    VISPEC_CHECK(!unconditional_.empty() && int64_t(unconditional_.size()) <= prefix_, config_.where,
                 ".unconditional: ", unconditional_.size(), " tokens; the prefix holds 1 to gpt.cls_token_num (",
                 prefix_, ")");
  }
}

std::string PromptTemplate::judge(const std::string& caption, PromptIds& ids) const {
  std::string text = config_.template_text;
  text.replace(text.find("{prompt}"), 8, caption);
  try {
    ids.prompt = tokenizer_->encode(text);
  } catch (const Error& e) {
    return std::string("prompt: ") + e.what();
  }
  if (int64_t(ids.prompt.size()) > prefix_)
    return "prompt: " + std::to_string(ids.prompt.size()) +
           " tokens in the template, more than the model's prefix "
           "holds (gpt.cls_token_num " +
           std::to_string(prefix_) + ")";
  if (pad_ >= 0) {
    ids.null_prompt = ids.prompt;
    for (size_t i = 1; i + 1 < ids.null_prompt.size(); ++i) ids.null_prompt[i] = pad_;
  } else {
    ids.null_prompt = unconditional_;
  }
  return "";
}

PromptIds PromptTemplate::operator()(const std::string& caption) const {
  PromptIds ids;
  const std::string error = judge(caption, ids);
  VISPEC_CHECK(error.empty(), error);
  return ids;
}

const PromptTemplate& prompt_template_for(const ModelConfig& model, const PromptConfig& p) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<PromptTemplate>> made;
  const std::string key = model.file + '\n' + p.tokenizer_json + '\n' + p.emu3_tiktoken + '\n' + p.template_text +
                          '\n' + p.unconditional + '\n' + p.unconditional_pad + '\n' +
                          std::to_string(model.gpt.cls_token_num) + '\n' + std::to_string(model.gpt.text_vocab_size);
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = made[key];
  if (!slot) slot = std::make_unique<PromptTemplate>(model, p);
  return *slot;
}

}  // namespace vispec
