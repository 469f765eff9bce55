// The regular expressions text tokenizers split text with, as Hugging Face tokenizers (Oniguruma) and
// tiktoken (Rust's regex) run them: over UTF-8, with Unicode properties (\p{L}, \p{N}, \p{P}), lookahead and
// scoped case folding, on Debian's PCRE2. Two differences between PCRE2 and those engines are removed here:
//   - \s and \S mean Unicode's White_Space (tab to carriage return, space, U+0085, U+00A0, U+1680,
//     U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), as in both; PCRE2's own \s also takes U+180E.
//   - `multiline`: ^ and $ match at every line's start and end, as in Oniguruma's Ruby syntax (tokenizer.json's
//     patterns); tiktoken's patterns are compiled without it.
// Plain C++, no torch.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vispec {

class TextRegex {
 public:
  // Throws an Error naming `where` (file and field) if the pattern does not compile.
  TextRegex(const std::string& pattern, bool multiline, const std::string& where);
  ~TextRegex();
  TextRegex(TextRegex&&) noexcept;
  TextRegex& operator=(TextRegex&&) noexcept;

  // Every non-empty match in `text`, left to right, as [begin, end) byte offsets; the search resumes where a
  // match ends (after an empty match, one character on).
  std::vector<std::pair<size_t, size_t>> find_all(const std::string& text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `pattern` with \s and \S replaced by explicit White_Space classes (see above). Throws for \S inside a class
// ([^\S] has no class-only spelling); exposed for the tokenizer tests.
std::string with_unicode_white_space(const std::string& pattern, const std::string& where);

// Whether code point `c` has Unicode's White_Space property.
bool is_unicode_white_space(char32_t c);

// The code point that starts at byte i of UTF-8 `text` and its byte length; an invalid byte is U+FFFD of one
// byte (the tokenizers' scans step over it; the regular expressions refuse such text).
std::pair<char32_t, size_t> code_point_at(const std::string& text, size_t i);

}  // namespace vispec
