// Prompt lists: one prompt per line; blank lines and lines starting with '#' are skipped. A prompt keeps
// its line number so that an error can name it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

struct Prompt {
  int64_t line = 0;   // 1-based line in the file
  std::string text;   // trimmed
};

std::vector<Prompt> read_prompts(const std::string& path);

}  // namespace vispec
