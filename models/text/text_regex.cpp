#include "models/text/text_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "core/check.h"

namespace vispec {

namespace {

// White_Space as a class body in PCRE2's syntax.
constexpr const char* kWhiteSpace =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

std::pair<char32_t, size_t> code_point_at(const std::string& text, size_t i) {
  utf8proc_int32_t c = -1;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                  utf8proc_ssize_t(text.size() - i), &c);
  return n > 0 ? std::pair<char32_t, size_t>{char32_t(c), size_t(n)} : std::pair<char32_t, size_t>{0xFFFD, 1};
}

bool is_unicode_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string with_unicode_white_space(const std::string& pattern, const std::string& where) {
  std::string out;
  bool in_class = false;
  size_t class_start = 0;  // index in `pattern` of the first character of the current class's body
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : std::string("[") + kWhiteSpace + "]";
      } else if (e == 'S') {
        VISPEC_CHECK(!in_class, where, ": \\S inside a character class is not supported in '", pattern, "'");
        out += std::string("[^") + kWhiteSpace + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      class_start = i + 1 + (i + 1 < pattern.size() && pattern[i + 1] == '^');
    } else if (in_class && c == ']' && i != class_start) {
      in_class = false;
    }
    out += c;
  }
  return out;
}

struct TextRegex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

TextRegex::TextRegex(const std::string& pattern, bool multiline, const std::string& where)
    : impl_(std::make_unique<Impl>()) {
  const std::string rewritten = with_unicode_white_space(pattern, where);
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                              PCRE2_UTF | PCRE2_UCP | (multiline ? PCRE2_MULTILINE : 0), &error, &offset, nullptr);
  VISPEC_CHECK(impl_->code != nullptr, where, ": the regular expression '", pattern,
               "' does not compile: ", pcre2_message(error));
}

TextRegex::~TextRegex() = default;
TextRegex::TextRegex(TextRegex&&) noexcept = default;
TextRegex& TextRegex::operator=(TextRegex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> TextRegex::find_all(const std::string& text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  for (size_t start = 0; start <= text.size();) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), start, 0, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    VISPEC_CHECK(rc >= 0, "text is not valid UTF-8 (", pcre2_message(rc), ")");
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(data.get());
    if (span[1] > span[0]) {
      matches.emplace_back(span[0], span[1]);
      start = span[1];
    } else {
      if (span[0] >= text.size()) break;
      start = span[0] + code_point_at(text, span[0]).second;
    }
  }
  return matches;
}

}  // namespace vispec
