// Encoding (the header lists the steps). The loaders are in bpe_tokenizer_files.cpp.
#include "models/text/bpe_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>

#include "core/check.h"

namespace vispec {

namespace {

std::string normalize_form(const std::string& text, NormalizeStep::Kind kind) {
  int options = UTF8PROC_STABLE;
  if (kind == NormalizeStep::Kind::nfc || kind == NormalizeStep::Kind::nfkc) options |= UTF8PROC_COMPOSE;
  else options |= UTF8PROC_DECOMPOSE;
  if (kind == NormalizeStep::Kind::nfkc || kind == NormalizeStep::Kind::nfkd) options |= UTF8PROC_COMPAT;
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), utf8proc_ssize_t(text.size()),
                              &out, utf8proc_option_t(options));
  VISPEC_CHECK(n >= 0, "text is not valid UTF-8 (", utf8proc_errmsg(n), ")");
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), size_t(n));
}

std::string normalize(std::string text, const std::vector<NormalizeStep>& steps) {
  for (const auto& step : steps) {
    switch (step.kind) {
      case NormalizeStep::Kind::replace: {
        std::string out;
        for (size_t at = 0;;) {
          const size_t next = step.pattern.empty() ? std::string::npos : text.find(step.pattern, at);
          out.append(text, at, next == std::string::npos ? std::string::npos : next - at);
          if (next == std::string::npos) break;
          out += step.content;
          at = next + step.pattern.size();
        }
        text = std::move(out);
        break;
      }
      case NormalizeStep::Kind::prepend:
        if (!text.empty()) text = step.content + text;
        break;
      default: text = normalize_form(text, step.kind);
    }
  }
  return text;
}

struct Span {
  size_t begin, end;
  bool match;
};

// One piece split by one step, as tokenizer.json's Split does it: the piece as alternating spans of non-matches
// and matches, `invert` swaps which is which, then the behaviour joins or drops spans.
std::vector<std::string> split_piece(const std::string& piece, const PreTokenizeStep& step) {
  std::vector<Span> spans;
  size_t previous = 0;
  for (const auto& [b, e] : step.regex.find_all(piece)) {
    if (b > previous) spans.push_back({previous, b, false});
    spans.push_back({b, e, true});
    previous = e;
  }
  if (previous < piece.size()) spans.push_back({previous, piece.size(), false});
  if (step.invert)
    for (auto& s : spans) s.match = !s.match;

  std::vector<Span> kept;
  bool previous_match = false;
  switch (step.behavior) {
    case SplitBehavior::isolated: kept = spans; break;
    case SplitBehavior::removed:
      for (const auto& s : spans)
        if (!s.match) kept.push_back(s);
      break;
    case SplitBehavior::merged_with_previous:
      for (const auto& s : spans) {
        if (s.match && !previous_match && !kept.empty()) kept.back().end = s.end;
        else kept.push_back(s);
        previous_match = s.match;
      }
      break;
    case SplitBehavior::merged_with_next:
      for (auto s = spans.rbegin(); s != spans.rend(); ++s) {
        if (s->match && !previous_match && !kept.empty()) kept.back().begin = s->begin;
        else kept.push_back(*s);
        previous_match = s->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case SplitBehavior::contiguous:
      for (const auto& s : spans) {
        if (s.match == previous_match && !kept.empty()) kept.back().end = s.end;
        else kept.push_back(s);
        previous_match = s.match;
      }
      break;
  }
  std::vector<std::string> pieces;
  for (const auto& s : kept)
    if (s.end > s.begin) pieces.push_back(piece.substr(s.begin, s.end - s.begin));
  return pieces;
}

}  // namespace

std::string BpeTokenizer::merge_key(const std::string& left, const std::string& right) {
  return std::to_string(left.size()) + ':' + left + right;
}

void BpeTokenizer::index_added_tokens() {
  for (size_t i = 0; i < added_.size(); ++i) {
    added_by_content_.emplace(added_[i].content, int64_t(i));
    const size_t length = added_[i].content.size();
    if (length > 0 && std::find(added_lengths_.begin(), added_lengths_.end(), length) == added_lengths_.end())
      added_lengths_.push_back(length);
    vocab_size_ = std::max(vocab_size_, added_[i].id + 1);
  }
  std::sort(added_lengths_.rbegin(), added_lengths_.rend());
  for (const auto& [spelling, id] : spelled_) vocab_size_ = std::max(vocab_size_, id + 1);
  for (const auto& [bytes, id] : vocab_) vocab_size_ = std::max(vocab_size_, id + 1);
}

std::vector<std::string> BpeTokenizer::pre_tokenize(const std::string& text) const {
  std::vector<std::string> pieces{text};
  for (const auto& step : pre_tokenizers_) {
    std::vector<std::string> next;
    for (auto& piece : pieces) {
      if (step.add_prefix_space && piece.front() != ' ') piece.insert(piece.begin(), ' ');
      for (auto& p : split_piece(piece, step)) next.push_back(std::move(p));
    }
    pieces = std::move(next);
  }
  return pieces;
}

int64_t BpeTokenizer::pair_rank(const std::string& left, const std::string& right) const {
  if (ranks_are_merges_) {
    const auto it = merge_ranks_.find(merge_key(left, right));
    return it == merge_ranks_.end() ? -1 : it->second;
  }
  const auto it = vocab_.find(left + right);
  return it == vocab_.end() ? -1 : it->second;
}

void BpeTokenizer::bpe(const std::string& piece, std::vector<int64_t>& ids) const {
  if (ignore_merges_) {
    const auto whole = vocab_.find(piece);
    if (whole != vocab_.end()) {
      ids.push_back(whole->second);
      return;
    }
  }
  std::vector<std::string> parts;
  for (char byte : piece) parts.emplace_back(1, byte);
  while (parts.size() > 1) {
    int64_t best = INT64_MAX;
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const int64_t rank = pair_rank(parts[i], parts[i + 1]);
      if (rank >= 0 && rank < best) best = rank, at = i;
    }
    if (best == INT64_MAX) break;
    parts[at] += parts[at + 1];
    parts.erase(parts.begin() + ptrdiff_t(at) + 1);
  }
  for (const auto& part : parts) {
    const auto it = vocab_.find(part);
    VISPEC_CHECK(it != vocab_.end(), file_, ": the vocabulary has no entry for the byte sequence of '", part,
                 "' (no byte fallback)");
    ids.push_back(it->second);
  }
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  auto encode_section = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    for (const auto& piece : pre_tokenize(normalize(text.substr(begin, end - begin), normalizers_))) bpe(piece, ids);
  };
  size_t section = 0;  // start of the text not yet encoded
  for (size_t i = 0; i < text.size();) {
    const AddedToken* token = nullptr;
    for (size_t length : added_lengths_) {  // the longest added token that starts here
      if (i + length > text.size()) continue;
      const auto it = added_by_content_.find(text.substr(i, length));
      if (it != added_by_content_.end()) {
        token = &added_[size_t(it->second)];
        break;
      }
    }
    if (!token) {
      i += code_point_at(text, i).second;
      continue;
    }
    size_t begin = i, end = i + token->content.size();
    if (token->lstrip)  // white space to its left belongs to the token
      while (begin > section) {
        size_t lead = begin - 1;
        while (lead > section && (static_cast<unsigned char>(text[lead]) & 0xC0) == 0x80) --lead;
        if (!is_unicode_white_space(code_point_at(text, lead).first)) break;
        begin = lead;
      }
    if (token->rstrip)
      while (end < text.size()) {
        const auto [c, n] = code_point_at(text, end);
        if (!is_unicode_white_space(c)) break;
        end += n;
      }
    encode_section(section, begin);
    ids.push_back(token->id);
    section = i = end;
  }
  encode_section(section, text.size());
  return ids;
}

int64_t BpeTokenizer::token_id(const std::string& token) const {
  const auto added = added_by_content_.find(token);
  if (added != added_by_content_.end()) return added_[size_t(added->second)].id;
  const auto spelled = spelled_.find(token);
  if (spelled != spelled_.end()) return spelled->second;
  const auto raw = vocab_.find(token);
  return raw == vocab_.end() ? -1 : raw->second;
}

}  // namespace vispec
