// The prompt list reader (io/prompts.h): every prompt, its UTF-8 check, and a reread from each prompt's offset
// giving the same prompts (what a worker does with its unit's start).
#include <vector>

#include "fuzz/fuzz_input.h"
#include "io/prompts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = vispec::fuzz::write_input(data, size, "prompts.txt");
  std::vector<vispec::Prompt> all;
  vispec::PromptReader reader(path);
  for (vispec::Prompt p; reader.next(p);) {
    vispec::invalid_utf8_at(p.text);
    all.push_back(p);
  }
  for (size_t i = 0; i < all.size(); i += 1 + all.size() / 8) {
    vispec::PromptReader again(path, all[i].offset, all[i].line);
    vispec::Prompt p;
    if (!again.next(p) || p.text != all[i].text || p.line != all[i].line) __builtin_trap();
  }
  return 0;
}
