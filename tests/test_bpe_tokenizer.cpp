// The LLM families' byte-level BPE tokenizers in C++ give Hugging Face tokenizers' ids (and tiktoken's, for
// Emu3's files) token for token, on strings chosen to be awkward: Unicode of many scripts, emoji with joiners
// and modifiers, combining marks that NFC composes, runs of spaces, tabs and newlines, every white space
// character the expressions treat specially, digits, contractions in both cases, special tokens inside text,
// and text that almost spells a special token. The tokenizers are trained at test time by
// tests/tiny_tokenizers.py in the families' shapes (its docstring lists them); nothing is downloaded.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "error_of.h"
#include "models/text/bpe_tokenizer.h"
#include "python_reference.h"
#include "core/check.h"

namespace vispec {

namespace {

std::string show(const std::vector<int64_t>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

class BpeTokenizerParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { reference = test::python_reference("tiny_tokenizers", "tiktoken"); }
  void SetUp() override {
    if (!reference.missing.empty()) GTEST_SKIP() << reference.missing;
    std::ifstream log(reference.dir / "make.log");
    ASSERT_TRUE(reference.made) << std::string(std::istreambuf_iterator<char>(log), {});
  }
  // Every string of expected.json[name] encodes to the reference's ids.
  void expect_parity(const std::string& name, const BpeTokenizer& tokenizer) {
    nlohmann::json expected;
    std::ifstream(reference.dir / "expected.json") >> expected;
    ASSERT_GT(expected.at(name).size(), 40u);
    size_t nonempty = 0;
    for (const auto& entry : expected.at(name)) {
      const std::string text = entry[0].get<std::string>();
      const auto want = entry[1].get<std::vector<int64_t>>();
      nonempty += !want.empty();
      EXPECT_EQ(show(tokenizer.encode(text)), show(want)) << name << ": '" << text << "'";
    }
    EXPECT_GT(nonempty, 40u);
  }
  static inline test::PythonReference reference;
};

TEST_F(BpeTokenizerParity, ChameleonShape) {
  const auto t = BpeTokenizer::from_tokenizer_json((reference.dir / "chameleon/tokenizer.json").string());
  expect_parity("chameleon", t);
  EXPECT_EQ(t.encode("<racm3:break>"), std::vector<int64_t>{t.token_id("<racm3:break>")});
}

TEST_F(BpeTokenizerParity, JanusShapeWithStrippingSpecials) {
  expect_parity("janus", BpeTokenizer::from_tokenizer_json((reference.dir / "janus/tokenizer.json").string()));
}

TEST_F(BpeTokenizerParity, EverySplitBehaviourAndInvert) {
  expect_parity("llama3", BpeTokenizer::from_tokenizer_json((reference.dir / "llama3/tokenizer.json").string()));
}

TEST_F(BpeTokenizerParity, Gpt2WithPrefixSpace) {
  expect_parity("gpt2", BpeTokenizer::from_tokenizer_json((reference.dir / "gpt2/tokenizer.json").string()));
}

TEST_F(BpeTokenizerParity, Emu3Tiktoken) {
  const auto t = BpeTokenizer::from_emu3_tiktoken((reference.dir / "emu3/emu3.tiktoken").string(),
                                                  (reference.dir / "emu3/emu3_vision_tokens.txt").string());
  expect_parity("emu3", t);
  // Emu3's special ids follow the ranks: <|endoftext|>, two more, 205 extras, then the vision tokens.
  const int64_t first = t.token_id("<|endoftext|>");
  EXPECT_EQ(t.token_id("<|extra_203|>"), first + 3 + 203);
  EXPECT_EQ(t.token_id("<|image start|>"), first + 3 + 205 + 1);
  EXPECT_EQ(t.vocab_size(), first + 3 + 205 + 11);
}

// A file of another kind, another model type, a pre-tokeniser or normaliser this reader does not know, a broken
// tiktoken line: one line naming the file and the field (or line).
TEST_F(BpeTokenizerParity, BadFilesNameFileAndField) {
  const auto dir = reference.dir;
  const auto own = std::filesystem::temp_directory_path() / ("vispec_bad_tokenizers_" + std::to_string(::getpid()));
  std::filesystem::create_directories(own);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((own / name).string()) << text;
    return (own / name).string();
  };
  auto load_error = [](const std::string& path) {
    return test::error_of([&] { BpeTokenizer::from_tokenizer_json(path); });
  };
  std::string p = write("spiece.json", "not json at all");
  EXPECT_NE(load_error(p).find(p + ": not a tokenizer.json"), std::string::npos) << load_error(p);
  p = write("wordpiece.json", R"({"model": {"type": "WordPiece", "vocab": {}}})");
  EXPECT_NE(load_error(p).find(p + ": model.type: 'WordPiece'"), std::string::npos) << load_error(p);
  p = write("meta.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Metaspace"}]}})");
  EXPECT_NE(load_error(p).find(p + ": pre_tokenizer.pretokenizers[0].type: pre-tokeniser 'Metaspace'"),
            std::string::npos)
      << load_error(p);
  p = write("regex.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"}})");
  EXPECT_NE(load_error(p).find(p + ": pre_tokenizer.pattern: the regular expression '(unclosed'"), std::string::npos)
      << load_error(p);
  p = write("nobyte.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "Digits"}})");
  EXPECT_NE(load_error(p).find(p + ": pre_tokenizer: no ByteLevel step"), std::string::npos) << load_error(p);
  p = write("merge.json", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]},
      "pre_tokenizer": {"type": "ByteLevel"}})");
  EXPECT_NE(load_error(p).find(p + ": model.merges[0]: 'a' + 'b' is not in the vocabulary"), std::string::npos)
      << load_error(p);
  p = write("lower.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "ByteLevel"}, "normalizer": {"type": "Lowercase"}})");
  EXPECT_NE(load_error(p).find(p + ": normalizer.type: normaliser 'Lowercase'"), std::string::npos) << load_error(p);
  // A tokenizer.json given where Emu3's ranks are expected.
  const std::string json = (dir / "gpt2/tokenizer.json").string();
  const auto e = test::error_of([&] { BpeTokenizer::from_emu3_tiktoken(json, json); });
  EXPECT_NE(e.find(json + ":1: not 'base64-bytes rank'"), std::string::npos) << e;
  std::filesystem::remove_all(own);
}

// \s and \S mean White_Space in every engine vispec mirrors; PCRE2's own \s would also take U+180E.
TEST(TextRegex, WhiteSpaceIsUnicodes) {
  const TextRegex space(R"(\s+)", false, "test"), other(R"([^\s\p{L}]+)", false, "test");
  EXPECT_EQ(space
                .find_all("a\x0b\xc2\x85\xe3\x80\x80"
                          "b")
                .size(),
            1u);                                        // VT, NEL, ideographic space
  EXPECT_TRUE(space.find_all("\xe1\xa0\x8e").empty());  // U+180E is not White_Space
  EXPECT_EQ(other.find_all("ab 12 cd").size(), 1u);
  EXPECT_THROW(TextRegex(R"([\S])", false, "test"), Error);
  const TextRegex line_end(R"(\s+$)", true, "test");  // multiline: $ at every line's end, as Oniguruma's
  EXPECT_EQ(line_end.find_all("a  \nb ").size(), 2u);
}

}  // namespace
}  // namespace vispec
