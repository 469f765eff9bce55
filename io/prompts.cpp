#include "io/prompts.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/check.h"

namespace vispec {

std::vector<Prompt> read_prompts(const std::string& path) {
  std::ifstream in(path);
  VISPEC_CHECK(in.good(), path, ": cannot read prompts file: ", std::strerror(errno));
  std::vector<Prompt> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    out.push_back({n, line.substr(b, e - b + 1)});
  }
  VISPEC_CHECK(!out.empty(), path, ": the prompts file holds no prompts");
  return out;
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
