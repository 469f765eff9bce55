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

// The byte offset of the first byte of `text` that does not begin a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are not well-formed), or std::string::npos if all of it is.
size_t invalid_utf8_at(const std::string& text);

}  // namespace vispec
