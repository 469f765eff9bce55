// vispec's T5 (models/text/t5_tokenizer.h, models/text/t5_encoder.h, models/text/text_encoder.h) against Hugging
// Face's, on a tiny random configuration made at test time by the virtual environment's transformers: a SentencePiece
// model trained on a small corpus, T5Tokenizer and the T5TokenizerFast that AutoTokenizer gives (what LlamaGen loads),
// a T5 saved with save_pretrained. Token ids must be identical on awkward strings and hidden states within
// 1e-5 in fp32; then a text-to-image job driven by captions gives the tokens of the same job driven by
// Hugging Face's features of those captions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "error_of.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "io/npy_tensor.h"
#include "llamagen_fixtures.h"
#include "models/text/text_encoder.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
// The strings both tokenizers see: whitespace runs, newlines, Unicode that NFKC changes, emoji, digits, the
// special tokens and sentinels written in text, an empty string and captions longer than max_length.
const char* const kStrings = R"([
  "a red bus parked in front of a yellow brick wall",
  "  leading and trailing spaces  ",
  "runs   of   spaces\tand\ttabs",
  "new\nlines\n\nand\r\ncarriage returns",
  "Unicode: ünïcödé, Ωμέγα, 日本語, the ﬁ ligature and ＦＵＬＬＷＩＤＴＨ",
  "emoji 🙂👍🏽 and a family 👨‍👩‍👧",
  "digits 1234567890 and 3.14159, 1,000,000",
  "special </s> inside <pad> and <unk> text",
  "sentinels <extra_id_0> a <extra_id_99> b <extra_id_100> c <extra_id_07>",
  "<extra_id_1>at the start",
  "ends with </s>",
  "UPPER and lower Case",
  "",
  " ",
  "the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat"
])";

// Trains the SentencePiece model, builds and saves the T5 (encoder only, and a whole encoder-decoder sharded
// as flan-T5's checkpoints are), and writes Hugging Face's ids and hidden states of every string.
const char* const kMakeT5 = R"(
import json, random, numpy as np, sentencepiece as spm, torch
from transformers import AutoTokenizer, T5Config, T5EncoderModel, T5ForConditionalGeneration, T5Tokenizer
random.seed(0)
torch.manual_seed(0)
words = ("a red blue green bus car cat dog sat on the mat photo of an astronaut riding horse in forest river "
         "water lilies map made out sushi table glass wine portrait kangaroo wearing orange hoodie sunglasses "
         "standing grass front opera house holding sign chest says welcome friends parked yellow brick wall").split()
lines = [" ".join(random.choice(words) for _ in range(random.randint(3, 14))) for _ in range(3000)]
lines += ["Digits 0123456789, punctuation .,;:!?'\"()-, Unicode ünïcödé Ωμέγα 日本語 🙂"] * 3
open("corpus.txt", "w").write("\n".join(lines))
spm.SentencePieceTrainer.train(input="corpus.txt", model_prefix="spiece", vocab_size=160, model_type="unigram",
                               pad_id=0, eos_id=1, unk_id=2, bos_id=-1, character_coverage=1.0,
                               hard_vocab_limit=False, minloglevel=2)
slow = T5Tokenizer("spiece.model", extra_ids=100, legacy=True)
config = T5Config(vocab_size=len(slow), d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=1,
                  num_heads=4, relative_attention_num_buckets=32, relative_attention_max_distance=20,
                  feed_forward_proj="gated-gelu", layer_norm_epsilon=1e-6, dropout_rate=0.0)
encoder = T5EncoderModel(config).eval()
for p in encoder.parameters():  # larger than the initialisation's, so every part of the model shows
    torch.nn.init.normal_(p, std=0.5)
encoder.save_pretrained("t5")
slow.save_pretrained("t5")
fast = AutoTokenizer.from_pretrained("t5")
whole = T5ForConditionalGeneration(config)
whole.encoder.load_state_dict(encoder.encoder.state_dict())
whole.shared.load_state_dict(encoder.shared.state_dict())
whole.save_pretrained("t5_sharded", max_shard_size="40KB")
slow.save_pretrained("t5_sharded")
strings = json.load(open("strings.json"))
out = {"slow": [], "fast": [], "fast_name": type(fast).__name__}
hidden = {}
for i, s in enumerate(strings):
    out["slow"].append(slow(s, max_length=24, truncation=True).input_ids)
    out["fast"].append(fast(s, max_length=24, truncation=True).input_ids)
    # As LlamaGen's T5Embedder: padded to max_length with the attention mask, valid positions kept.
    t = fast([s], max_length=24, padding="max_length", truncation=True, return_tensors="pt")
    with torch.no_grad():
        h = encoder(input_ids=t.input_ids, attention_mask=t.attention_mask).last_hidden_state
    hidden[i] = h[0, :int(t.attention_mask.sum())].numpy()
    np.save("hidden_%d.npy" % i, hidden[i])
json.dump(out, open("ids.json", "w"))
)";

// The reference files are made once for all the tests (the script takes a few seconds).
class T5Parity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The reference needs transformers with SentencePiece and protobuf: scripts/setup.sh puts them in .venv; a
    // machine whose Python lacks them (the GPU machine's own) skips, visibly.
    const std::string probe =
        std::string(VISPEC_TORCH_PYTHON) + " -c 'import transformers, sentencepiece, google.protobuf' > /dev/null 2>&1";
    if (std::system(probe.c_str()) != 0) {
      missing = std::string(VISPEC_TORCH_PYTHON) + " lacks transformers, sentencepiece or protobuf (scripts/setup.sh)";
      return;
    }
    dir = fs::temp_directory_path() / ("vispec_t5_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "strings.json") << kStrings;
    std::ofstream(dir / "make.py") << kMakeT5;
    const std::string cmd = "cd " + dir.string() + " && " + VISPEC_TORCH_PYTHON + " make.py > make.log 2>&1";
    made = std::system(cmd.c_str()) == 0;
    if (!made) return;
    strings = nlohmann::json::parse(kStrings).get<std::vector<std::string>>();
    reference = nlohmann::json::parse(read_file((dir / "ids.json").string()));
  }
  static void TearDownTestSuite() {
    if (!dir.empty()) fs::remove_all(dir);
  }
  void SetUp() override {
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(made) << read_file((dir / "make.log").string());
  }
  // The LlamaGen text-to-image fixture's model config (caption_dim 32) reading captions with the T5 in
  // `t5_dir` (max_length 24).
  std::string config(const std::string& t5_dir) {
    const auto path = dir / "model.yaml";
    std::ofstream(path) << test::llamagen_fixture_config(
        "t2i", "text_encoder: {dir: " + (dir / t5_dir).string() + ", max_length: 24, dtype: fp32}\n");
    return path.string();
  }
  static inline fs::path dir;
  static inline bool made = false;
  static inline std::string missing;  // why the reference cannot be made here
  static inline std::vector<std::string> strings;
  static inline nlohmann::json reference;
};

TEST_F(T5Parity, TokenIdsEqualHuggingFaceTokenizers) {
  EXPECT_EQ(reference["fast_name"], "T5TokenizerFast");  // what LlamaGen's AutoTokenizer gives
  T5Tokenizer tokenizer((dir / "t5/spiece.model").string());
  for (size_t i = 0; i < strings.size(); ++i) {
    const auto ours = tokenizer.encode(strings[i], 24);
    EXPECT_EQ(ours, reference["fast"][i].get<std::vector<int64_t>>()) << "T5TokenizerFast, string " << i;
    // The slow tokenizer agrees, except that it adds no "</s>" after a written one (string 10).
    auto slow = reference["slow"][i].get<std::vector<int64_t>>();
    if (strings[i].size() >= 4 && strings[i].compare(strings[i].size() - 4, 4, "</s>") == 0) slow.push_back(1);
    EXPECT_EQ(ours, slow) << "T5Tokenizer, string " << i;
  }
}

TEST_F(T5Parity, HiddenStatesEqualHuggingFaceT5EncoderModel) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  for (const char* layout : {"t5", "t5_sharded"}) {  // encoder-only file; whole model in shards (decoder skipped)
    const auto model = load_model_config(config(layout));
    TextEncoder encoder(model, torch::kCPU);
    double worst = 0;
    for (size_t i = 0; i < strings.size(); ++i) {
      const auto ours = encoder.encode(strings[i]);
      const auto theirs = read_npy_tensor((dir / ("hidden_" + std::to_string(i) + ".npy")).string());
      ASSERT_EQ(ours.sizes(), theirs.sizes()) << layout << ", string " << i;
      worst = std::max(worst, (ours - theirs).abs().max().item<double>());
    }
    std::cout << layout << ": largest |difference| " << worst << "\n";
    EXPECT_LT(worst, 1e-5) << layout;
  }
}

// Captions in the prompt file drive a text-to-image job to the tokens of the same job given Hugging Face's
// features of those captions as npy: prompts.
TEST_F(T5Parity, ACaptionJobEqualsTheJobOnHuggingFaceFeatures) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  const std::string model = config("t5");
  std::ofstream captions(dir / "captions.txt"), features(dir / "features.txt");
  for (int i : {0, 4, 14}) {  // a plain caption, Unicode, one longer than max_length
    captions << strings[size_t(i)] << "\n";
    features << "npy:hidden_" << i << ".npy\n";
  }
  captions.close();
  features.close();
  std::vector<std::vector<int32_t>> tokens[2];
  int k = 0;
  for (const char* prompts : {"captions.txt", "features.txt"}) {
    const std::string out = (dir / ("out_" + std::to_string(k))).string();
    std::ofstream(dir / "job.yaml") << "model: " << model << "\nprompts: " << (dir / prompts).string()
                                    << "\ndecoder: {name: ar, temperature: 0, cfg_scale: 7.5}\nout: " << out << "\n";
    const auto r = test::run_vispec("run " + (dir / "job.yaml").string());
    ASSERT_EQ(r.exit_code, 0) << prompts << ": " << r.text;
    for (int id = 0; id < 3; ++id)
      tokens[k].push_back(read_npy_int32(out + "/tokens/0000000" + std::to_string(id) + ".npy"));
    ++k;
  }
  EXPECT_EQ(tokens[0], tokens[1]);
}

TEST_F(T5Parity, BadTextEncoderFilesAreOneLineErrors) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  fs::remove_all(dir / "bad");
  fs::copy(dir / "t5", dir / "bad");
  std::ofstream(dir / "bad/spiece.model") << "not a model";
  auto err = test::error_of([&] { check_text_encoder_weights(load_model_config(config("bad"))); });
  EXPECT_NE(err.find("spiece.model: not a SentencePiece model"), std::string::npos) << err;
  fs::copy_file(dir / "t5/spiece.model", dir / "bad/spiece.model", fs::copy_options::overwrite_existing);
  std::string json = read_file((dir / "bad/config.json").string());
  json.replace(json.find("\"d_model\": 32"), 13, "\"d_model\": 16");
  std::ofstream(dir / "bad/config.json") << json;
  err = test::error_of([&] { check_text_encoder_weights(load_model_config(config("bad"))); });
  EXPECT_NE(err.find("bad/config.json: d_model 16 is not gpt.caption_dim 32"), std::string::npos) << err;
  fs::remove(dir / "bad/model.safetensors");
  err = test::error_of([&] { check_text_encoder_weights(load_model_config(config("bad"))); });
  EXPECT_NE(err.find("bad: no model.safetensors[.index.json] or pytorch_model.bin[.index.json]"), std::string::npos)
      << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

}  // namespace
}  // namespace vispec
