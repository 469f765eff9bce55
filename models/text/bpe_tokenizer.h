// Byte-level BPE text tokenizers, as the LLM families' own tokenizers turn a prompt into ids: Chameleon's
// (Lumina-mGPT, Anole) and Janus-Pro's tokenizer.json (Hugging Face tokenizers), and Emu3's tiktoken ranks.
// Encoding runs in the order both libraries run it:
//   1. split the text at the added (special) tokens written in it: leftmost match first, the longest at a
//      position; a token with lstrip / rstrip also takes the white space on that side;
//   2. normalise each piece between them (NFC, NFKC, NFD, NFKD, a literal replacement, a prefix);
//   3. pre-tokenise: each step splits every piece by a regular expression (models/text/text_regex.h) in one of
//      tokenizer.json's behaviours (isolated, removed, merged with the previous or next piece, contiguous,
//      inverted); byte-level splitting is the GPT-2 expression, isolated;
//   4. BPE over each piece's bytes: a piece that is itself a token is that token where the file says so
//      (ignore_merges; tiktoken always); otherwise adjacent parts are merged, lowest rank first (leftmost
//      among equals), until no pair has a rank. A pair's rank is its line in tokenizer.json's merges, or for
//      tiktoken the rank of the bytes it makes.
// The post-processor's BOS is not added: a prompt template (models/text/prompt_template.h) writes the family's
// tokens itself. Plain C++ on PCRE2 and utf8proc (Debian's), no torch.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/text/text_regex.h"

namespace vispec {

struct AddedToken {
  std::string content;
  int64_t id = -1;
  bool lstrip = false, rstrip = false;
};

enum class SplitBehavior { isolated, removed, merged_with_previous, merged_with_next, contiguous };

struct PreTokenizeStep {
  TextRegex regex;
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;            // the matches are what is kept apart, not what splits (tokenizer.json's `invert`)
  bool add_prefix_space = false;  // byte-level: a space before every piece that starts without one
};

struct NormalizeStep {
  enum class Kind { nfc, nfd, nfkc, nfkd, replace, prepend } kind;
  std::string pattern, content;  // replace: every `pattern` by `content`; prepend: `content` before the text
};

class BpeTokenizer {
 public:
  // tokenizer.json as Hugging Face tokenizers writes it (model BPE over the byte-level alphabet). Throws an
  // Error naming the file and field for anything else: another model type, a normaliser or pre-tokeniser this
  // reader does not know, a merge of parts missing from the vocabulary.
  static BpeTokenizer from_tokenizer_json(const std::string& path);
  // Emu3's tokenizer: `ranks` (emu3.tiktoken: one "base64(bytes) rank" per line, ranks 0..n-1), Emu3's
  // pre-tokenising expression and NFC, and its special tokens from id n on: <|endoftext|>, <|im_start|>,
  // <|im_end|>, <|extra_0|> .. <|extra_204|>, then one per non-empty line of `vision_tokens`
  // (emu3_vision_tokens.txt: <|image token|>, <|image start|>, ..., <|visual token 000000|>, ...).
  static BpeTokenizer from_emu3_tiktoken(const std::string& ranks, const std::string& vision_tokens);

  std::vector<int64_t> encode(const std::string& text) const;
  // The id of an added token or vocabulary entry spelled `token` (byte-level spelling for vocabulary entries
  // of tokenizer.json), or -1.
  int64_t token_id(const std::string& token) const;
  int64_t vocab_size() const { return vocab_size_; }  // one past the largest id
  const std::string& file() const { return file_; }
  // Every vocabulary entry as raw bytes -> id (added tokens excluded); the image-token table check reads it.
  const std::unordered_map<std::string, int64_t>& byte_vocab() const { return vocab_; }

 private:
  BpeTokenizer() = default;
  std::vector<std::string> pre_tokenize(const std::string& text) const;
  void bpe(const std::string& piece, std::vector<int64_t>& ids) const;
  int64_t pair_rank(const std::string& left, const std::string& right) const;
  static std::string merge_key(const std::string& left, const std::string& right);
  void index_added_tokens();  // the loaders' last step: added_by_content_, added_lengths_, vocab_size_

  std::string file_;
  std::vector<AddedToken> added_;
  std::unordered_map<std::string, int64_t> added_by_content_;  // content -> index in added_
  std::vector<size_t> added_lengths_;                          // every distinct content length, longest first
  std::vector<NormalizeStep> normalizers_;
  std::vector<PreTokenizeStep> pre_tokenizers_;
  std::unordered_map<std::string, int64_t> vocab_;        // raw bytes -> id
  std::unordered_map<std::string, int64_t> merge_ranks_;  // merge_key(left, right) -> rank (tokenizer.json)
  std::unordered_map<std::string, int64_t> spelled_;      // tokenizer.json's own spelling of every entry -> id
  bool ranks_are_merges_ = true;                          // false: tiktoken, a pair's rank is vocab_[left + right]
  bool ignore_merges_ = false;
  int64_t vocab_size_ = 0;
};

}  // namespace vispec
