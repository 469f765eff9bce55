// The `prompt:` section of a prompted model's config (Chameleon, Janus-Pro, Emu3): the tokenizer's files and
// the family's templates. models/text/prompt_template.h applies it; docs/model_families.md lists each family's.
//
//   prompt:
//     tokenizer: tokenizer/text_tokenizer.json       # Hugging Face's tokenizer.json, or Emu3's two files:
//     # tokenizer: {emu3_tiktoken: emu3.tiktoken, emu3_vision_tokens: emu3_vision_tokens.txt}
//     template: "<s>Generate an image of 768x768 according to the following prompt:\n{prompt}<reserved08706>..."
//     unconditional: "<racm3:break><reserved08824><reserved08824>"   # the unconditional stream's text, or
//     # unconditional_pad: "<｜▁pad▁｜>"   # Janus-Pro: the prompt's ids, all but the first and last this token
#pragma once

#include <string>

namespace vispec {

struct PromptConfig {
  bool present = false;
  std::string where;           // "file:line: prompt", for messages about the section
  std::string tokenizer_json;  // tokenizer.json, or Emu3's:
  std::string emu3_tiktoken, emu3_vision_tokens;
  std::string template_text;      // special tokens written as text; "{prompt}" once: the prompt file's line
  std::string unconditional;      // the unconditional stream's text (tokenised as it is), or
  std::string unconditional_pad;  // a token: the conditional ids with all but the first and last replaced by it
};

}  // namespace vispec
