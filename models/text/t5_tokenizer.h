// T5's tokenizer, as Hugging Face's T5TokenizerFast (what LlamaGen's AutoTokenizer loads) turns a caption into
// ids: the special tokens written in the text ("</s>", "<pad>", "<unk>", and "<extra_id_N>" with the
// whitespace around it) split it, each piece between them goes through the SentencePiece model (spiece.model)
// alone, the result is cut to max_length - 1 ids and "</s>" is appended. The slow T5Tokenizer gives the same
// ids but for one case: it appends no "</s>" to a text that ends with one. Plain C++ on Debian's
// libsentencepiece: no torch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace vispec {

class T5Tokenizer {
 public:
  // spiece_model: the file; extra_ids: the sentinel tokens appended after the model's pieces (T5: 100).
  explicit T5Tokenizer(const std::string& spiece_model, int64_t extra_ids = 100);
  ~T5Tokenizer();
  std::vector<int64_t> encode(const std::string& text, int64_t max_length) const;
  int64_t vocab_size() const;  // pieces + extra ids
  int64_t eos_id() const { return eos_; }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string path_;
  int64_t extra_ids_, eos_, pad_, unk_;
};

}  // namespace vispec
