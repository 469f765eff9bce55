// vispec computes what LlamaGen computes: the reference data in ../shared/fixtures/llamagen was made by
// LlamaGen's own gpt.py, generate.py, sample_t2i.py and vq_model.py with random tiny weights (its README).
// Class-to-image: teacher-forced logits and CFG greedy tokens; text-to-image: CFG greedy tokens under
// sample_t2i.py's left padding and emb_mask, from the fixture's padded arrays and end to end from a prompt
// file of caption features; the VQ: codes decoded to pixels and images encoded to codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli.h"
#include "io/atomic_file.h"
#include "decoding/ar.h"
#include "decoding/sjd.h"
#include "decoding/zipar.h"
#include "io/npy.h"
#include "io/npy_tensor.h"
#include "llamagen_fixtures.h"
#include "temp_dir_test.h"
#include "workers/loaded_models.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
torch::Tensor fixture(const std::string& name) { return read_npy_tensor(test::kLlamaGenFixtures + name); }

// The fixture model config of `kind` written into `dir`; returns its path.
std::string fixture_config(const fs::path& dir, const std::string& kind) {
  const auto path = dir / (kind + ".yaml");
  std::ofstream(path) << test::llamagen_fixture_config(kind);
  return path.string();
}

SamplingParams greedy(double cfg_scale) {
  SamplingParams p;
  p.cfg_scale = cfg_scale;
  p.temperature = 0;
  return p;
}

class LlamaGenParity : public test::TempDirTest {
 protected:
  LlamaGenParity() : TempDirTest("parity") {}
  // A job of the text-to-image fixture over dir/PROMPTS into dir/out; returns its path.
  std::string t2i_job(const std::string& prompts, const std::string& decoder) {
    std::ofstream(dir / "job.yaml") << "model: " << fixture_config(dir, "t2i")
                                    << "\nprompts: " << (dir / prompts).string() << "\ndecoder: " << decoder
                                    << "\nout: " << (dir / "out").string() << "\n";
    return (dir / "job.yaml").string();
  }
  LoadedModels load(const std::string& kind) {
    return load_models(load_model_config(fixture_config(dir, kind)), torch::kCPU);
  }
};

// The trainers that read Fashion-MNIST (given no image folder) refuse a LlamaGen model (RGB images) in one line naming
// its config, before they write anything (the run directory holds at most its lock), instead of failing inside
// LibTorch.
TEST_F(LlamaGenParity, FashionTrainersRefuseALlamaGenModelInOneLine) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  const auto config = fixture_config(dir, "c2i");
  for (const std::string trainer : {"vq", "gpt", "classifier", "mulo-resamplers"}) {
    const auto out = dir / ("out-" + trainer);
    const auto r = test::run_vispec("train " + trainer + " --config " + config + " --steps 1 --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << r.text;
    // (train gpt and mulo-resamplers take the model's own images with --images: tests/train_llamagen.sh)
    const std::string given = trainer == "gpt"               ? " without --images or --codes"
                              : trainer == "mulo-resamplers" ? " without --images"
                                                             : "";
    EXPECT_NE(r.text.find("c2i.yaml: train " + trainer + given +
                          " trains on Fashion-MNIST (1-channel 28x28 images) only, "
                          "and this model's images are 3-channel"),
              std::string::npos)
        << r.text;
    EXPECT_EQ(std::count(r.text.begin(), r.text.end(), '\n'), 1) << r.text;
    if (fs::exists(out))
      for (const auto& f : fs::directory_iterator(out))
        EXPECT_NE(f.path().filename().string().find("lock"), std::string::npos) << trainer << " wrote " << f.path();
  }
}

TEST_F(LlamaGenParity, ClassToImageLogitsAndGreedyTokens) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  torch::NoGradGuard no_grad;
  auto m = load("c2i");
  const auto classes = fixture("c2i_class_ids.npy");
  const auto tokens = fixture("c2i_tokens.npy").to(torch::kInt64);
  // Teacher forcing: output j predicts image token j from the class token and tokens 0 .. j-1.
  const auto inputs = tokens.narrow(1, 0, tokens.size(1) - 1);
  const auto cond = m.gpt->forward_sequence(m.gpt->embed_classes(classes), inputs).logits;
  const auto null = m.gpt->forward_sequence(m.gpt->null_condition(classes.size(0)), inputs).logits;
  EXPECT_LT((cond - fixture("c2i_logits_cond.npy")).abs().max().item<double>(), 1e-4);
  EXPECT_LT((null - fixture("c2i_logits_null.npy")).abs().max().item<double>(), 1e-4);

  DecodeRequest req;
  req.conditions.class_ids = classes;
  req.sample_ids = {0, 1};
  for (const auto& [scale, expected] :
       {std::pair<double, const char*>{4.0, "c2i_greedy_cfg4.npy"}, {1.0, "c2i_greedy_nocfg.npy"}}) {
    ArDecoder ar(m.gpt, greedy(scale));
    const auto got = ar.decode(req).tokens;
    EXPECT_TRUE(torch::equal(got, fixture(expected).to(torch::kInt64))) << expected;
    if (scale == 4.0) {  // and the VQ turns them into LlamaGen's pixels
      const auto images = m.vq->decode_codes(got, 8, 8);
      EXPECT_LT((images - fixture("c2i_greedy_cfg4_images.npy")).abs().max().item<double>(), 1e-4);
    }
  }
}

// sample_t2i.py: caption features left-padded into 120 positions, emb_mask hiding the padded keys from every
// query but their own, the unconditional rows from uncond_embedding under the same mask; greedy, CFG 7.5.
TEST_F(LlamaGenParity, TextToImageGreedyTokensUnderLeftPaddingAndEmbMask) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  torch::NoGradGuard no_grad;
  auto m = load("t2i");
  const auto expected = fixture("t2i_greedy_cfg7.5.npy").to(torch::kInt64);
  // Our left padding of the raw encoder outputs equals the fixture's padded arrays.
  const auto raw = fixture("t2i_caption_embs.npy");
  const auto valid = fixture("t2i_caption_valid.npy");
  std::vector<torch::Tensor> features;
  for (int64_t b = 0; b < raw.size(0); ++b) features.push_back(raw[b].narrow(0, 0, valid[b].item<int64_t>()));
  const auto ours = caption_conditions(features, 120);
  EXPECT_TRUE(torch::equal(ours.captions, fixture("t2i_left_padded_embs.npy")));
  EXPECT_TRUE(torch::equal(ours.caption_mask, fixture("t2i_left_padded_mask.npy").to(torch::kBool)));

  DecodeRequest req;
  req.conditions = ours;
  req.sample_ids = {0, 1};
  ArDecoder ar(m.gpt, greedy(7.5));
  EXPECT_TRUE(torch::equal(ar.decode(req).tokens, expected));
  // Decoders that append other blocks see the same mask: SJD's Jacobi windows and ZipAR's rows (window = the
  // grid width, where it is AR in another order) give the same greedy tokens.
  EXPECT_TRUE(torch::equal(SjdDecoder(m.gpt, greedy(7.5), 4).decode(req).tokens, expected));
  EXPECT_TRUE(torch::equal(ZipArDecoder(m.gpt, greedy(7.5), 8).decode(req).tokens, expected));

  // Teacher forcing under the same mask (distillation's forward) picks the same tokens at every position.
  const auto inputs = expected.narrow(1, 0, expected.size(1) - 1);
  const auto c = m.gpt->prefix(ours), u = m.gpt->prefix(ours, /*unconditional=*/true);
  EXPECT_TRUE(torch::equal(c.visible, u.visible));  // the unconditional stream under the caption's mask
  const auto cond = m.gpt->forward_sequence(c.embeddings, inputs, c.visible).logits;
  const auto null = m.gpt->forward_sequence(u.embeddings, inputs, u.visible).logits;
  EXPECT_TRUE(torch::equal(cfg_combine(torch::cat({cond, null}), 7.5).argmax(-1), expected));

  // The mask matters: without it (every caption position visible) the tokens differ.
  req.conditions.caption_mask = torch::ones_like(ours.caption_mask);
  EXPECT_FALSE(torch::equal(ArDecoder(m.gpt, greedy(7.5)).decode(req).tokens, expected));
}

// The same from a user's side: a prompt file of "npy:FILE" lines naming each caption's features as LlamaGen's
// feature extraction saves them ([1, L, caption_dim] float32), through `vispec run`.
TEST_F(LlamaGenParity, TextToImageJobFromCaptionFeatureFiles) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  const auto raw = fixture("t2i_caption_embs.npy").contiguous();
  const auto valid = fixture("t2i_caption_valid.npy");
  std::ofstream prompts(dir / "captions.txt");
  for (int64_t b = 0; b < raw.size(0); ++b) {
    const auto f = raw[b].narrow(0, 0, valid[b].item<int64_t>()).contiguous();
    const std::string name = "caption" + std::to_string(b) + ".npy";
    fs::create_directories(dir / "features");
    write_npy((dir / "features" / name).string(), "<f4", f.data_ptr(), size_t(f.numel()) * 4,
              {1, f.size(0), f.size(1)});
    prompts << "npy:features/" << name << "\n";
  }
  prompts.close();
  const std::string out = (dir / "out").string();
  const auto r = test::run_vispec("run " + t2i_job("captions.txt", "{name: ar, temperature: 0, cfg_scale: 7.5}"));
  ASSERT_EQ(r.exit_code, 0) << r.text;
  const auto expected = fixture("t2i_greedy_cfg7.5.npy");
  for (int64_t b = 0; b < 2; ++b) {
    const auto got = read_npy_int32(out + "/tokens/0000000" + std::to_string(b) + ".npy");
    EXPECT_TRUE(torch::equal(torch::tensor(got), expected[b])) << "sample " << b;
  }
}

// Bad caption features are bad prompt lines: recorded with file, line and why, the other prompts generated,
// exit 5 (some prompts failed).
TEST_F(LlamaGenParity, BadCaptionFeaturesAreRecordedPromptErrors) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  const auto ok = torch::zeros({3, 32});
  const auto wide = torch::zeros({3, 16});
  const auto long_caption = torch::zeros({121, 32});
  const std::vector<int32_t> ints(96, 0);
  write_npy((dir / "ok.npy").string(), "<f4", ok.data_ptr(), 3 * 32 * 4, {3, 32});
  write_npy((dir / "wide.npy").string(), "<f4", wide.data_ptr(), 3 * 16 * 4, {3, 16});
  write_npy((dir / "long.npy").string(), "<f4", long_caption.data_ptr(), 121 * 32 * 4, {121, 32});
  write_npy_int32((dir / "ints.npy").string(), ints, {3, 32});
  std::ofstream(dir / "bad.npy") << "not numpy";
  std::ofstream(dir / "captions.txt") << "npy:ok.npy\na red bus\nnpy:missing.npy\nnpy:wide.npy\nnpy:long.npy\n"
                                         "npy:ints.npy\nnpy:bad.npy\n";
  const std::string out = (dir / "out").string();
  const auto r = test::run_vispec("run " + t2i_job("captions.txt", "{name: ar, temperature: 0}"));
  EXPECT_EQ(r.exit_code, 5) << r.text;
  EXPECT_TRUE(fs::exists(out + "/tokens/00000000.npy")) << "the good caption is generated";
  const std::string errors = read_file(out + "/errors.jsonl");
  EXPECT_EQ(test::count_lines(errors), 6) << errors;
  for (const char* expected : {"captions.txt:2: prompt: a caption needs a text encoder",
                               "captions.txt:3: prompt: ", "missing.npy: cannot open", "captions.txt:4: prompt: ",
                               "wide.npy: caption features of shape [3, 16]; expected [L, 32]",
                               "long.npy: caption of 121 tokens; the model takes 1 to 120",
                               "ints.npy: caption features of dtype '<i4'", "bad.npy: not a .npy file"})
    EXPECT_NE(errors.find(expected), std::string::npos) << expected << "\n" << errors;
}

TEST_F(LlamaGenParity, VqDecodesAndEncodesAsLlamaGen) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  torch::NoGradGuard no_grad;
  auto m = load("c2i");
  const auto pixels = m.vq->decode_codes(fixture("vq_codes.npy").to(torch::kInt64), 4, 4);
  EXPECT_LT((pixels - fixture("vq_decoded.npy")).abs().max().item<double>(), 1e-4);
  EXPECT_TRUE(
      torch::equal(m.vq->encode(fixture("vq_encode_input.npy")), fixture("vq_encode_codes.npy").to(torch::kInt64)));
}

}  // namespace
}  // namespace vispec
