// Prompt lists: one prompt per line; blank lines and lines starting with '#' are skipped. A prompt keeps its
// line number so that an error can name it, and its byte offset so that a unit's prompts can be read without
// reading the lines before them (a job of 10^8 prompts is never held in memory).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace vispec {

struct Prompt {
  int64_t line = 0;     // 1-based line in the file
  uint64_t offset = 0;  // byte offset of the line's start
  std::string text;     // trimmed of spaces, tabs and a CR (a CRLF file reads like an LF one)
};

// Streams the prompts of a file from `offset`, which must be the start of line `line`.
class PromptReader {
 public:
  explicit PromptReader(const std::string& path, uint64_t offset = 0, int64_t line = 1);
  bool next(Prompt& prompt);  // false at the end of the file
  // FNV-1a over every byte read so far: after a whole pass from offset 0, the file's (scheduler/fingerprint.h).
  uint64_t bytes_fnv() const { return fnv_; }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t offset_;
  int64_t line_;
  uint64_t fnv_;
};

// The whole list, for small ones (a bench's); throws if it is unreadable or holds no prompt.
std::vector<Prompt> read_prompts(const std::string& path);

// The byte offset of the first byte of `text` that does not begin a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are not well-formed), or std::string::npos if all of it is.
size_t invalid_utf8_at(const std::string& text);
// A prompt as a message quotes it: whole up to kQuotedBytes, else its first bytes (cut at a character's start)
// and how long it is, so that a 20 MB line is not echoed into the log and errors.jsonl.
inline constexpr size_t kQuotedBytes = 200;
std::string quoted_prompt(const std::string& text);

}  // namespace vispec
