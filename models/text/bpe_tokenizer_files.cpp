// The loaders of BpeTokenizer: tokenizer.json (Hugging Face tokenizers) and Emu3's tiktoken files.
#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/check.h"
#include "models/text/bpe_tokenizer.h"

namespace vispec {

namespace {

using nlohmann::json;

// GPT-2's byte-level alphabet: byte b is spelled as one character, b itself for the printable bytes, 256 + n
// for the n-th of the others. byte_of[code point] inverts it.
std::unordered_map<char32_t, unsigned char> byte_level_alphabet() {
  std::unordered_map<char32_t, unsigned char> byte_of;
  char32_t extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    byte_of[printable ? char32_t(b) : extra++] = static_cast<unsigned char>(b);
  }
  return byte_of;
}

// A vocabulary entry spelled in the byte-level alphabet -> its bytes; false if a character is outside it (an
// added token's own spelling, "<｜▁pad▁｜>", say).
bool bytes_of(const std::string& spelled, const std::unordered_map<char32_t, unsigned char>& byte_of,
              std::string& bytes) {
  bytes.clear();
  for (size_t i = 0; i < spelled.size();) {
    const auto [c, n] = code_point_at(spelled, i);
    const auto it = byte_of.find(c);
    if (it == byte_of.end()) return false;
    bytes.push_back(static_cast<char>(it->second));
    i += n;
  }
  return true;
}

std::string regex_escape(const std::string& literal) {
  std::string out;
  for (char c : literal) {
    if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c))) out += '\\';
    out += c;
  }
  return out;
}

// GPT-2's pre-tokenising expression: what ByteLevel with use_regex splits by.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Emu3's (its tokenization_emu3.py PAT_STR).
constexpr const char* kEmu3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Standard base64 (tiktoken's files); false for anything else.
bool decode_base64(const std::string& in, std::string& out) {
  out.clear();
  uint32_t buffer = 0;
  int bits = 0;
  size_t padding = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') {
      ++padding;
      continue;
    } else return false;
    if (padding) return false;
    buffer = (buffer << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return !in.empty() && in.size() % 4 == 0 && padding <= 2;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  VISPEC_CHECK(in, path, ": cannot read the tokenizer file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

BpeTokenizer BpeTokenizer::from_tokenizer_json(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    VISPEC_FAIL(path, ": not a tokenizer.json (not JSON: ", e.what(), ")");
  }
  VISPEC_CHECK(j.is_object() && j.contains("model") && j["model"].is_object(), path,
               ": not a tokenizer.json (no `model` object)");
  BpeTokenizer t;
  t.file_ = path;
  const json& model = j["model"];
  const std::string type = model.value("type", "BPE");
  VISPEC_CHECK(type == "BPE", path, ": model.type: '", type,
               "' (only BPE tokenizers are read: Chameleon's, Janus-Pro's)");
  VISPEC_CHECK(
      model.contains("vocab") && model["vocab"].is_object() && model.contains("merges") && model["merges"].is_array(),
      path, ": model: a BPE model needs `vocab` and `merges`");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    VISPEC_CHECK(!model.contains(key) || model[key].is_null() || model[key] == "", path, ": model.", key,
                 ": not supported (byte-level BPE has none)");
  VISPEC_CHECK(!model.contains("dropout") || model["dropout"].is_null(), path, ": model.dropout: not supported");
  t.ignore_merges_ = model.value("ignore_merges", false);

  // Pre-tokenisers: splits, then ByteLevel last (it maps bytes to the alphabet the vocabulary is spelled in).
  auto add_split = [&](const std::string& pattern, SplitBehavior behavior, bool invert, const std::string& field) {
    t.pre_tokenizers_.push_back({TextRegex(pattern, true, path + ": " + field), behavior, invert, false});
  };
  bool byte_level = false;
  std::function<void(const json&, const std::string&)> pre = [&](const json& p, const std::string& field) {
    VISPEC_CHECK(p.is_object(), path, ": ", field, ": not an object");
    const std::string kind = p.value("type", "");
    VISPEC_CHECK(!byte_level, path, ": ", field, ": a pre-tokeniser after ByteLevel is not supported");
    if (kind == "Sequence") {
      const json& steps = p.value("pretokenizers", json::array());
      for (size_t i = 0; i < steps.size(); ++i) pre(steps[i], field + ".pretokenizers[" + std::to_string(i) + "]");
    } else if (kind == "Split") {
      const json& pattern = p.value("pattern", json::object());
      std::string regex;
      if (pattern.contains("Regex")) regex = pattern["Regex"].get<std::string>();
      else if (pattern.contains("String")) regex = regex_escape(pattern["String"].get<std::string>());
      else VISPEC_FAIL(path, ": ", field, ".pattern: neither Regex nor String");
      const std::string behavior = p.value("behavior", "Isolated");
      SplitBehavior b;
      if (behavior == "Isolated") b = SplitBehavior::isolated;
      else if (behavior == "Removed") b = SplitBehavior::removed;
      else if (behavior == "MergedWithPrevious") b = SplitBehavior::merged_with_previous;
      else if (behavior == "MergedWithNext") b = SplitBehavior::merged_with_next;
      else if (behavior == "Contiguous") b = SplitBehavior::contiguous;
      else VISPEC_FAIL(path, ": ", field, ".behavior: unknown behaviour '", behavior, "'");
      add_split(regex, b, p.value("invert", false), field + ".pattern");
    } else if (kind == "Digits") {
      add_split(p.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)", SplitBehavior::isolated, false, field);
    } else if (kind == "Punctuation") {
      const std::string behavior = p.value("behavior", "Isolated");
      VISPEC_CHECK(behavior == "Isolated", path, ": ", field, ".behavior: only Isolated punctuation is supported");
      add_split(R"([\p{P}!-/:-@\[-`{-~])", SplitBehavior::isolated, false, field);
    } else if (kind == "ByteLevel") {
      byte_level = true;
      const bool prefix = p.value("add_prefix_space", false);
      if (p.value("use_regex", true)) {
        add_split(kGpt2Pattern, SplitBehavior::isolated, false, field);
        t.pre_tokenizers_.back().add_prefix_space = prefix;
      } else if (prefix) {  // a step that only adds the space: a pattern that never matches
        add_split("(?!)", SplitBehavior::isolated, false, field);
        t.pre_tokenizers_.back().add_prefix_space = true;
      }
    } else {
      VISPEC_FAIL(path, ": ", field, ".type: pre-tokeniser '", kind,
                  "' is not supported (Sequence, Split, Digits, "
                  "Punctuation, ByteLevel are)");
    }
  };
  VISPEC_CHECK(j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null(), path,
               ": pre_tokenizer: none (only byte-level BPE tokenizers are read)");
  pre(j["pre_tokenizer"], "pre_tokenizer");
  VISPEC_CHECK(byte_level, path, ": pre_tokenizer: no ByteLevel step (only byte-level BPE tokenizers are read)");

  std::function<void(const json&, const std::string&)> norm = [&](const json& n, const std::string& field) {
    if (n.is_null()) return;
    const std::string kind = n.value("type", "");
    if (kind == "Sequence") {
      const json& steps = n.value("normalizers", json::array());
      for (size_t i = 0; i < steps.size(); ++i) norm(steps[i], field + ".normalizers[" + std::to_string(i) + "]");
    } else if (kind == "NFC") t.normalizers_.push_back({NormalizeStep::Kind::nfc, "", ""});
    else if (kind == "NFD") t.normalizers_.push_back({NormalizeStep::Kind::nfd, "", ""});
    else if (kind == "NFKC") t.normalizers_.push_back({NormalizeStep::Kind::nfkc, "", ""});
    else if (kind == "NFKD") t.normalizers_.push_back({NormalizeStep::Kind::nfkd, "", ""});
    else if (kind == "Prepend") t.normalizers_.push_back({NormalizeStep::Kind::prepend, "", n.value("prepend", "")});
    else if (kind == "Replace" && n.value("pattern", json::object()).contains("String"))
      t.normalizers_.push_back(
          {NormalizeStep::Kind::replace, n["pattern"]["String"].get<std::string>(), n.value("content", "")});
    else
      VISPEC_FAIL(path, ": ", field, ".type: normaliser '", kind,
                  "' is not supported (NFC, NFD, NFKC, NFKD, "
                  "Prepend, Replace of a string, Sequence are)");
  };
  if (j.contains("normalizer")) norm(j["normalizer"], "normalizer");

  const auto byte_of = byte_level_alphabet();
  std::string bytes;
  for (const auto& [spelled, id] : model["vocab"].items()) {
    VISPEC_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0, path, ": model.vocab.", spelled, ": not an id");
    t.spelled_.emplace(spelled, id.get<int64_t>());
    if (bytes_of(spelled, byte_of, bytes)) t.vocab_.emplace(bytes, id.get<int64_t>());
  }
  const json& merges = model["merges"];
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    std::string left, right;
    if (m.is_string()) {  // "left right" (older files)
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ', 1);
      VISPEC_CHECK(space != std::string::npos, path, ": model.merges[", rank, "]: not 'left right'");
      left = s.substr(0, space), right = s.substr(space + 1);
    } else {
      VISPEC_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), path, ": model.merges[", rank,
                   "]: not a pair of strings");
      left = m[0].get<std::string>(), right = m[1].get<std::string>();
    }
    VISPEC_CHECK(t.spelled_.count(left + right), path, ": model.merges[", rank, "]: '", left, "' + '", right,
                 "' is not in the vocabulary");
    std::string l, r;
    if (bytes_of(left, byte_of, l) && bytes_of(right, byte_of, r))
      t.merge_ranks_.emplace(merge_key(l, r), int64_t(rank));
  }
  for (const auto& a : j.value("added_tokens", json::array())) {
    VISPEC_CHECK(a.contains("content") && a.contains("id"), path, ": added_tokens: an entry without content or id");
    VISPEC_CHECK(!a.value("single_word", false), path, ": added_tokens: '", a["content"].get<std::string>(),
                 "': single_word tokens are not supported");
    t.added_.push_back(
        {a["content"].get<std::string>(), a["id"].get<int64_t>(), a.value("lstrip", false), a.value("rstrip", false)});
  }
  t.index_added_tokens();
  return t;
}

BpeTokenizer BpeTokenizer::from_emu3_tiktoken(const std::string& ranks, const std::string& vision_tokens) {
  BpeTokenizer t;
  t.file_ = ranks;
  t.ranks_are_merges_ = false;
  t.ignore_merges_ = true;  // tiktoken takes a piece that is a token as it is
  t.normalizers_.push_back({NormalizeStep::Kind::nfc, "", ""});
  t.pre_tokenizers_.push_back({TextRegex(kEmu3Pattern, false, ranks), SplitBehavior::isolated, false, false});

  std::istringstream lines(read_file(ranks));
  std::string line;
  for (int64_t number = 1; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string encoded;
    int64_t rank = -1;
    fields >> encoded >> rank;
    std::string decoded;
    VISPEC_CHECK(rank >= 0 && decode_base64(encoded, decoded), ranks, ":", number,
                 ": not 'base64-bytes rank' (an Emu3 emu3.tiktoken file)");
    VISPEC_CHECK(t.vocab_.emplace(decoded, rank).second, ranks, ":", number, ": the same bytes twice");
  }
  const int64_t n = int64_t(t.vocab_.size());
  VISPEC_CHECK(n > 0, ranks, ": no ranks (an Emu3 emu3.tiktoken file)");
  std::vector<bool> seen(size_t(n), false);
  for (const auto& [bytes, rank] : t.vocab_) {
    VISPEC_CHECK(rank < n && !seen[size_t(rank)], ranks, ": ranks are not 0 .. ", n - 1, " (rank ", rank, ")");
    seen[size_t(rank)] = true;
  }
  std::vector<std::string> specials{"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (int i = 0; i < 205; ++i) specials.push_back("<|extra_" + std::to_string(i) + "|>");
  std::istringstream vision(read_file(vision_tokens));
  while (std::getline(vision, line)) {
    const size_t b = line.find_first_not_of(" \t\r\n\v\f"), e = line.find_last_not_of(" \t\r\n\v\f");
    if (b != std::string::npos) specials.push_back(line.substr(b, e + 1 - b));
  }
  for (size_t i = 0; i < specials.size(); ++i) t.added_.push_back({specials[i], n + int64_t(i), false, false});
  t.index_added_tokens();
  return t;
}

}  // namespace vispec
