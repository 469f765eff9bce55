#include "models/text/t5_tokenizer.h"

#include <sentencepiece_processor.h>

#include "core/check.h"

namespace vispec {

T5Tokenizer::T5Tokenizer(const std::string& spiece_model, int64_t extra_ids)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()), path_(spiece_model), extra_ids_(extra_ids) {
  const auto status = sp_->Load(spiece_model);
  VISPEC_CHECK(status.ok(), spiece_model, ": not a SentencePiece model (", status.ToString(), ")");
  auto id_of = [&](const char* piece) {
    const int id = sp_->PieceToId(piece);
    VISPEC_CHECK(sp_->IdToPiece(id) == piece, spiece_model, ": the model has no '", piece, "' piece (not T5's)");
    return int64_t(id);
  };
  eos_ = id_of("</s>");
  pad_ = id_of("<pad>");
  unk_ = id_of("<unk>");
}

T5Tokenizer::~T5Tokenizer() = default;

int64_t T5Tokenizer::vocab_size() const { return int64_t(sp_->GetPieceSize()) + extra_ids_; }

std::vector<int64_t> T5Tokenizer::encode(const std::string& text, int64_t max_length) const {
  std::vector<int64_t> ids;
  auto encode_piece = [&](std::string piece) {
    std::vector<int> out;
    const auto status = sp_->Encode(piece, &out);
    VISPEC_CHECK(status.ok(), path_, ": SentencePiece failed on a caption (", status.ToString(), ")");
    ids.insert(ids.end(), out.begin(), out.end());
  };
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  std::string piece;        // text since the last special token
  bool strip_next = false;  // after a sentinel: its right side's whitespace goes
  for (size_t i = 0; i < text.size();) {
    int64_t special = -1;
    size_t length = 0;
    bool sentinel = false;
    if (text[i] == '<') {
      for (const auto& [name, id] : {std::pair<const char*, int64_t>{"</s>", eos_}, {"<pad>", pad_}, {"<unk>", unk_}})
        if (text.compare(i, std::strlen(name), name) == 0) special = id, length = std::strlen(name);
      // <extra_id_N>, N < extra_ids, is the sentinel vocab_size - 1 - N (the longest match wins).
      const std::string prefix = "<extra_id_";
      if (text.compare(i, prefix.size(), prefix) == 0) {
        size_t j = i + prefix.size();
        int64_t n = 0;
        while (j < text.size() && j - i - prefix.size() < 4 && std::isdigit(static_cast<unsigned char>(text[j])))
          n = n * 10 + (text[j++] - '0');
        const bool digits = j > i + prefix.size() && !(text[i + prefix.size()] == '0' && j > i + prefix.size() + 1);
        if (digits && j < text.size() && text[j] == '>' && n < extra_ids_)
          special = vocab_size() - 1 - n, length = j + 1 - i, sentinel = true;
      }
    }
    if (special < 0) {
      if (!(strip_next && is_space(text[i]))) piece.push_back(text[i]), strip_next = false;
      ++i;
      continue;
    }
    if (sentinel)
      while (!piece.empty() && is_space(piece.back())) piece.pop_back();
    encode_piece(piece);
    piece.clear();
    ids.push_back(special);
    strip_next = sentinel;
    i += length;
  }
  encode_piece(piece);
  if (int64_t(ids.size()) > max_length - 1) ids.resize(size_t(max_length - 1));
  ids.push_back(eos_);  // always, as T5TokenizerFast does (the slow T5Tokenizer skips it after a written "</s>")
  return ids;
}

}  // namespace vispec
