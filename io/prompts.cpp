#include "io/prompts.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "io/file_digest.h"

namespace vispec {

namespace {
// The kind of a file that is not a regular one, for the message that refuses it.
const char* kind_of(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory: return "a directory";
    case std::filesystem::file_type::fifo: return "a named pipe";
    case std::filesystem::file_type::socket: return "a socket";
    case std::filesystem::file_type::block:
    case std::filesystem::file_type::character: return "a device";
    default: return "not a regular file";
  }
}

// Opens `path` only if it is a regular file: a named pipe would block the open (and the run) forever, and a
// prompt file is read more than once (planned, then each unit's lines), which only a file can be.
std::ifstream open_regular(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status))
    VISPEC_CHECK(std::filesystem::is_regular_file(status), path, ": the prompts file is ", kind_of(status.type()),
                 ", not a regular file: vispec reads it more than once, so it must be a file");
  return std::ifstream(path, std::ios::binary);
}
}  // namespace

PromptReader::PromptReader(const std::string& path, uint64_t offset, int64_t line)
    : path_(path), in_(open_regular(path)), offset_(offset), line_(line), fnv_(kFnv1aBasis) {
  VISPEC_CHECK(in_.good(), path, ": cannot read prompts file: ", std::strerror(errno));
  if (offset > 0) in_.seekg(std::streamoff(offset));
}

bool PromptReader::next(Prompt& prompt) {
  std::string line;
  while (std::getline(in_, line)) {
    const bool newline = !in_.eof();  // the last line may lack one
    fnv_ = fnv1a(line.data(), line.size(), fnv_);
    if (newline) fnv_ = fnv1a("\n", 1, fnv_);
    const uint64_t start = offset_;
    const int64_t number = line_;
    offset_ += line.size() + (newline ? 1 : 0);
    ++line_;
    // A UTF-8 byte-order mark (as some editors save a file) is no part of the first prompt.
    if (start == 0 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    prompt = {number, start, line.substr(b, e - b + 1)};
    return true;
  }
  VISPEC_CHECK(!in_.bad(), path_, ": read failed: ", std::strerror(errno));
  return false;
}

std::vector<Prompt> read_prompts(const std::string& path) {
  PromptReader reader(path);
  std::vector<Prompt> out;
  for (Prompt p; reader.next(p);) out.push_back(std::move(p));
  VISPEC_CHECK(!out.empty(), path, ": the prompts file holds no prompts");
  return out;
}

std::string quoted_prompt(const std::string& text) {
  if (text.size() <= kQuotedBytes) return text;
  size_t cut = kQuotedBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

size_t invalid_utf8_at(const std::string& text) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = b[i];
    size_t len = 0;
    // The second byte's allowed range: narrower after E0, ED, F0 and F4, which rules out overlong forms,
    // surrogates (U+D800..DFFF) and code points above U+10FFFF.
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      const unsigned d = b[i + k];
      if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) return i;
    }
    i += len;
  }
  return std::string::npos;
}

}  // namespace vispec
