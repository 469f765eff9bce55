// The one configurable GPT computes what Hugging Face's Chameleon (Lumina-mGPT, Anole), Janus-Pro and Emu3
// compute: tiny random models of each are made at test time by tests/tiny_families.py (save_pretrained, sharded
// safetensors), loaded through a model config naming their options and their checkpoint's names, and fed two
// prompts of different lengths (left-padded into one batch) followed by image tokens (Emu3's rows ending in its
// end-of-line token, which the model adds itself). Hidden states and the logits over the image codes must be
// within 1e-4 of transformers' in fp32, teacher-forced and through the KV cache (one token per step, and a
// causal block after the prompt); greedy tokens under guidance must equal the families' generation loops.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "cli.h"
#include "decoding/ar.h"
#include "decoding/sjd.h"
#include "decoding/zipar.h"
#include "error_of.h"
#include "io/atomic_file.h"
#include "io/npy_tensor.h"
#include "io/run_layout.h"
#include "models/gpt/gpt.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "models/text/prompt_template.h"
#include "models/vq/vq.h"
#include "python_reference.h"
#include "workers/job_plan.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
// Each family's options, as its tiny model's config.json gives them (tests/tiny_families.py).
const char* const kFamilyOptions[][2] = {
    {"chameleon",
     "names: hf_llama, rope: 1d, qkv: separate, qk_norm: true, n_kv_head: 2, norm_eps: 1.0e-5, "
     "text_vocab_size: 600, image_token_offset: 4"},
    {"janus",
     "names: hf_janus, rope: 1d, qkv: separate, norm_eps: 1.0e-6, text_vocab_size: 600, "
     "image_input: aligner_mlp, image_embed_dim: 8, image_output: head_mlp, image_mlp_dim: 64"},
    {"emu3",
     "names: hf_llama, rope: 1d, rope_base: 1.0e6, qkv: separate, n_kv_head: 2, norm_eps: 1.0e-5, "
     "text_vocab_size: 600, image_token_offset: 4, eol_token: 597"},
};

class FamilyParity : public ::testing::Test {
 protected:
  // The references: tests/tiny_families.py's outputs, made once per version of the script.
  static void SetUpTestSuite() {
    const auto reference = test::python_reference("tiny_families", "transformers", {"tiny_tokenizers"});
    dir = reference.dir, made = reference.made, missing = reference.missing;
    own = fs::temp_directory_path() / ("vispec_families_configs_" + std::to_string(::getpid()));
    fs::remove_all(own);
    fs::create_directories(own);
  }
  static void TearDownTestSuite() {
    if (!own.empty()) fs::remove_all(own);
  }
  void SetUp() override {
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(made) << read_file((dir / "make.log").string());
  }

  // The model config of family `fam` (cls_token_num 12 prefix positions, a 4 x 4 grid); `options` replaces
  // the family's own. The VQ is the embedded model's (the families' VQs are tested on their own).
  // vq: the section's own text instead; prefix: cls_token_num; extra: more top-level sections.
  static std::string config(const std::string& fam, std::string options = "", std::string vq = "", int64_t prefix = 12,
                            const std::string& extra = "") {
    for (const auto& [name, own] : kFamilyOptions)
      if (fam == name && options.empty()) options = own;
    const auto path = own / (fam + ".yaml");  // this process's: the shared directory holds references only
    const std::string src = VISPEC_SOURCE_DIR;
    std::ofstream(path) << "name: tiny-" << fam
                        << "\ngpt: {weights: " << (dir / fam / "model.safetensors.index.json").string()
                        << ", vocab_size: 512, dim: 64, n_layer: 2, n_head: 4, ffn_hidden_size: 96, grid_size: 4, "
                        << "cls_token_num: " << prefix << ", " << options << "}\nvq: {"
                        << (vq.empty()
                                ? "weights: " + src +
                                      "/configs/fmnist/vq.safetensors, codebook_size: 512, "
                                      "codebook_embed_dim: 8, in_channels: 1, z_channels: 32, ch: 32, ch_mult: [1, 2], "
                                      "num_res_blocks: 1, norm_groups: 8"
                                : vq)
                        << "}\n"
                        << extra;
    return path.string();
  }
  // Family `fam`'s VQ as the vq section `section` describes it, loaded.
  static VqModel load_vq(const std::string& fam, const std::string& section) {
    const auto m = load_model_config(config(fam, "", section));
    VqModel vq(m.vq);
    load_weights(*vq, m.vq_weights, {}, m.vq_keys);
    return vq;
  }
  // Largest |difference| between the pixels `vq` decodes family `fam`'s reference codes to and its reference
  // pixels (printed).
  static double pixel_error(VqModel& vq, const std::string& fam, const std::string& codes, const std::string& pixels) {
    const double error = (vq->decode_codes(ref(fam, codes), 4, 4) - ref(fam, pixels)).abs().max().item<double>();
    std::cout << fam << " VQ (" << vq->parameters()[0].dtype() << "): largest |difference| " << error << "\n";
    return error;
  }
  static Gpt load(const std::string& fam) {
    const auto m = load_model_config(config(fam));
    Gpt gpt(m.gpt, torch::TensorOptions(), /*random_init=*/false);
    load_weights(*gpt, m.gpt_weights, {}, m.gpt_keys);
    gpt->eval();
    return gpt;
  }
  static torch::Tensor ref(const std::string& fam, const std::string& name) {
    return read_npy_tensor((dir / (fam + "_ref") / (name + ".npy")).string());
  }
  // The two reference prompts, left-padded into the model's 12 positions (the unconditional stream unused).
  static Conditions prompts(const std::string& fam) {
    const auto ids = ref(fam, "prompts"), lens = ref(fam, "lens");
    std::vector<std::vector<int64_t>> rows;
    for (int64_t r = 0; r < 2; ++r) {
      const auto row = ids[r].narrow(0, 0, lens[r].item<int64_t>()).contiguous();
      rows.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
    }
    return prompt_conditions(rows, rows, 12);
  }
  // Row r's reference outputs at the N + 1 positions that predict image tokens 0 .. N.
  static torch::Tensor predicting(const std::string& fam, const std::string& name, int64_t r) {
    return ref(fam, name + "_" + std::to_string(r));
  }

  static inline fs::path dir;  // the references, shared
  static inline fs::path own;  // this process's configs and files
  static inline bool made = false;
  static inline std::string missing;
};

TEST_F(FamilyParity, TeacherForcedHiddenStatesAndImageLogitsEqualTransformers) {
  torch::NoGradGuard no_grad;
  for (const auto& [fam, options] : kFamilyOptions) {
    auto gpt = load(fam);
    const auto codes = ref(fam, "codes");
    const auto prefix = gpt->prefix(prompts(fam));
    const auto out = gpt->forward_sequence(prefix.embeddings, codes, prefix.visible);
    double worst_hidden = 0, worst_logits = 0;
    for (int64_t r = 0; r < 2; ++r) {
      worst_hidden =
          std::max(worst_hidden, (gpt->norm(out.hidden[r]) - predicting(fam, "hidden", r)).abs().max().item<double>());
      worst_logits = std::max(worst_logits, (out.logits[r] - predicting(fam, "logits", r)).abs().max().item<double>());
    }
    std::cout << fam << ": largest |difference| hidden " << worst_hidden << ", logits " << worst_logits << "\n";
    EXPECT_LT(worst_hidden, 1e-4) << fam;
    EXPECT_LT(worst_logits, 1e-4) << fam;
  }
  // The end-of-line tokens matter: Emu3's model without them computes something else after the first row.
  const auto m = load_model_config(config("emu3",
                                          "names: hf_llama, rope: 1d, rope_base: 1.0e6, qkv: separate, "
                                          "n_kv_head: 2, text_vocab_size: 600, image_token_offset: 4"));
  Gpt plain(m.gpt, torch::TensorOptions(), false);
  load_weights(*plain, m.gpt_weights, {}, m.gpt_keys);
  const auto prefix = plain->prefix(prompts("emu3"));
  const auto logits = plain->forward_sequence(prefix.embeddings, ref("emu3", "codes"), prefix.visible).logits;
  EXPECT_LT((logits[0].narrow(0, 0, 4) - predicting("emu3", "logits", 0).narrow(0, 0, 4)).abs().max().item<double>(),
            1e-4);
  EXPECT_GT((logits[0] - predicting("emu3", "logits", 0)).abs().max().item<double>(), 1e-2);
}

// Through the KV cache: the prompt prefilled (its padding hidden, positions counted from its first token), then
// the image tokens one per step, and again as one causal block after the prompt.
TEST_F(FamilyParity, CachedStepsAndBlocksEqualTransformers) {
  torch::NoGradGuard no_grad;
  for (const auto& [fam, options] : kFamilyOptions) {
    auto gpt = load(fam);
    const auto codes = ref(fam, "codes");
    const int64_t N = codes.size(1);
    const auto prefix = gpt->prefix(prompts(fam));
    const auto positions = torch::arange(N, torch::kInt64).unsqueeze(0).expand({2, N});
    std::vector<torch::Tensor> expected;
    for (int64_t r = 0; r < 2; ++r) expected.push_back(predicting(fam, "logits", r));
    const auto expected_batch = torch::stack(expected);  // [2, N + 1, V]

    auto cache = gpt->make_cache(2);
    auto first = gpt->prefill(cache, prefix.embeddings, prefix.visible).logits.select(1, -1);
    cache.advance();
    std::vector<torch::Tensor> steps = {first};
    for (int64_t t = 0; t < N; ++t) {
      steps.push_back(
          gpt->decode_block(cache, codes.narrow(1, t, 1), positions.narrow(1, t, 1), torch::ones({1, 1}, torch::kBool))
              .logits.select(1, 0));
      cache.advance();
    }
    const double step_error = (torch::stack(steps, 1) - expected_batch).abs().max().item<double>();

    cache.reset();
    gpt->prefill(cache, prefix.embeddings, prefix.visible);
    cache.advance();
    const auto block = gpt->decode_block(cache, codes, positions, causal_mask(N)).logits;
    const double block_error = (block - expected_batch.narrow(1, 1, N)).abs().max().item<double>();
    std::cout << fam << ": largest |difference| one per step " << step_error << ", as a block " << block_error << "\n";
    EXPECT_LT(step_error, 1e-4) << fam;
    EXPECT_LT(block_error, 1e-4) << fam;
  }
}

// A draft tree across a row end on Emu3 (both siblings at the row's last cell get their own end-of-line entry),
// then one path kept (KvCache::keep_paths names nodes; the cache keeps their end-of-line entries with them)
// and decoding carried on: every output the teacher-forced reference's.
TEST_F(FamilyParity, TreesAcrossRowEndsKeepTheirEndOfLineEntries) {
  torch::NoGradGuard no_grad;
  auto gpt = load("emu3");
  const auto codes = ref("emu3", "codes");  // [2, 10]; rows of 4: token 3 ends the first row
  std::vector<torch::Tensor> expected_rows;
  for (int64_t r = 0; r < 2; ++r) expected_rows.push_back(predicting("emu3", "logits", r));
  const auto expected = torch::stack(expected_rows);  // [2, 11, V]: output j predicts token j
  const auto prefix = gpt->prefix(prompts("emu3"));
  auto cache = gpt->make_cache(2);
  gpt->prefill(cache, prefix.embeddings, prefix.visible);
  cache.advance();
  gpt->decode_block(cache, codes.narrow(1, 0, 2), torch::tensor({{0, 1}, {0, 1}}), causal_mask(2));
  cache.advance();
  // Nodes: 0 = token 2; 1 = token 3 and 2 = a wrong sibling, both children of 0; 3 = token 4, child of 1.
  auto tokens =
      torch::stack({codes.select(1, 2), codes.select(1, 3), (codes.select(1, 3) + 1) % 512, codes.select(1, 4)}, 1);
  const auto positions = torch::tensor({2, 3, 3, 4}).unsqueeze(0).expand({2, 4});
  const auto tree = torch::tensor({{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 0, 1, 0}, {1, 1, 0, 1}}, torch::kBool);
  const auto out = gpt->decode_block(cache, tokens, positions, tree).logits;
  EXPECT_LT((out.select(1, 0) - expected.select(1, 3)).abs().max().item<double>(), 1e-4);
  EXPECT_LT((out.select(1, 1) - expected.select(1, 4)).abs().max().item<double>(), 1e-4);
  EXPECT_LT((out.select(1, 3) - expected.select(1, 5)).abs().max().item<double>(), 1e-4);
  cache.keep_paths({{0, 1, 3}, {0, 1, 3}});
  EXPECT_EQ(cache.length(0), 12 + 2 + 4);  // prefix, two tokens, three tokens and one end-of-line entry
  const auto next = gpt->decode_block(cache, codes.narrow(1, 5, 1), torch::full({2, 1}, 5, torch::kInt64),
                                      torch::ones({1, 1}, torch::kBool))
                        .logits;
  EXPECT_LT((next.select(1, 0) - expected.select(1, 6)).abs().max().item<double>(), 1e-4);
}

// The greedy tokens of each family's official generation loop under classifier-free guidance (each stream its
// own prompt; Emu3's rows ending in its end-of-line token; tests/tiny_families.py) from vispec's AR decoder, and
// from decoders that append other blocks (SJD's Jacobi windows, across row ends; ZipAR's rows); ZipAR's rows in
// parallel against a loop of its own schedule.
TEST_F(FamilyParity, GreedyTokensUnderGuidanceEqualTheFamiliesGenerationLoops) {
  torch::NoGradGuard no_grad;
  for (const auto& [fam, scale] : {std::pair<std::string, double>{"chameleon", 3.0}, {"janus", 5.0}, {"emu3", 3.0}}) {
    auto gpt = load(fam);
    std::vector<std::vector<int64_t>> cond, null;
    for (int r = 0; r < 2; ++r)
      for (auto [name, into] :
           {std::pair<const char*, std::vector<std::vector<int64_t>>*>{"cond_", &cond}, {"null_", &null}}) {
        const auto ids = ref(fam, name + std::to_string(r));
        into->emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
      }
    DecodeRequest req;
    req.conditions = prompt_conditions(cond, null, 12);
    req.sample_ids = {0, 1};
    SamplingParams greedy;
    greedy.cfg_scale = scale;
    greedy.temperature = 0;
    const auto expected = ref(fam, "greedy_cfg");
    EXPECT_TRUE(torch::equal(ArDecoder(gpt, greedy).decode(req).tokens, expected)) << fam;
    EXPECT_TRUE(torch::equal(SjdDecoder(gpt, greedy, 3).decode(req).tokens, expected)) << fam;
    // One row for both samples: the second takes the row when the first is done, its prompt's prefill (and
    // hidden padding) moved into the row (KvCache::take_rows), Emu3's into a dynamic cache.
    auto one_row = req;
    one_row.rows = 1;
    EXPECT_TRUE(torch::equal(SjdDecoder(gpt, greedy, 3).decode(one_row).tokens, expected)) << fam;
    EXPECT_TRUE(torch::equal(ZipArDecoder(gpt, greedy, 4).decode(req).tokens, expected)) << fam;
    // Rows in parallel (window 2 of 4): a ZipAR loop written with transformers' modules and caches, Emu3's
    // rows ending in their end-of-line token (tests/tiny_families.py zipar_greedy_cfg).
    const auto zipar = ZipArDecoder(gpt, greedy, 2).decode(req).tokens;
    EXPECT_TRUE(torch::equal(zipar, ref(fam, "zipar_greedy"))) << fam << "\n" << zipar;
    EXPECT_FALSE(torch::equal(zipar, expected)) << fam;  // a schedule of its own, not AR's
  }
}

// Captions in a job's prompt file, through each family's template and tokenizer (files of the family's shape,
// trained by tests/tiny_tokenizers.py), give Hugging Face's ids for both streams (tiktoken's for Emu3), and
// `vispec run` turns them into the greedy tokens of the family's generation loop on those ids.
TEST_F(FamilyParity, CaptionsInPromptFilesGenerateThroughTheFamilyTemplate) {
  const char* const captions[] = {"a red bus", "Ünïcödé café: 2 cats 👍🏽 at dusk"};
  for (const auto& [fam, scale, prompt] : std::vector<std::tuple<std::string, double, std::string>>{
           {"chameleon", 3.0,
            "{tokenizer: " + (dir / "chameleon_tokenizer/tokenizer.json").string() +
                ", template: \"<s>Generate an image of 64x64 according to the following prompt:\\n{prompt}"
                "<reserved08706><racm3:break><reserved08802><reserved08802>\", "
                "unconditional: \"<racm3:break><reserved08802><reserved08802>\"}"},
           {"janus", 5.0,
            "{tokenizer: " + (dir / "janus_tokenizer/tokenizer.json").string() +
                ", template: \"<｜begin▁of▁sentence｜><|User|>: {prompt}\\n\\n<|Assistant|>:<begin_of_image>\", "
                "unconditional_pad: \"<｜▁pad▁｜>\"}"},
           {"emu3", 3.0,
            "{tokenizer: {emu3_tiktoken: " + (dir / "emu3_tokenizer/emu3.tiktoken").string() +
                ", emu3_vision_tokens: " + (dir / "emu3_tokenizer/emu3_vision_tokens.txt").string() +
                "}, template: \"<|extra_203|>{prompt} masterpiece, film grained, best quality.<|image start|>4*4"
                "<|image token|>\", unconditional: \"<|extra_203|>lowres, bad anatomy, blurry.<|image start|>4*4"
                "<|image token|>\"}"}}) {
    const std::string model = config(fam, "", "", 72, "prompt: " + prompt + "\n");
    const auto m = load_model_config(model);
    for (int r = 0; r < 2; ++r) {
      const auto ids = prompt_template_for(m)(captions[r]);
      EXPECT_TRUE(torch::equal(torch::tensor(ids.prompt), ref(fam, "caption_cond_" + std::to_string(r)))) << fam;
      EXPECT_TRUE(torch::equal(torch::tensor(ids.null_prompt), ref(fam, "caption_null_" + std::to_string(r)))) << fam;
    }
    std::ofstream(own / "captions.txt") << captions[0] << "\n" << captions[1] << "\n";
    const auto out = own / ("out_" + fam);
    std::ofstream(own / "job.yaml") << "model: " << model << "\nprompts: " << (own / "captions.txt").string()
                                    << "\nout: " << out.string()
                                    << "\ndecoder: {name: ar, temperature: 0, cfg_scale: " << scale
                                    << "}\nimages_per_prompt: 1\nbatch_size: 2\ndevice: cpu\n";
    const auto run = test::run_vispec("run " + (own / "job.yaml").string());
    ASSERT_EQ(run.exit_code, 0) << run.text;
    const auto expected = ref(fam, "caption_greedy");
    for (int r = 0; r < 2; ++r)
      EXPECT_TRUE(torch::equal(read_npy_tensor(tokens_path(out.string(), uint64_t(r))).flatten(), expected[r]))
          << fam << " sample " << r;
  }
}

// Janus-Pro's VQ is LlamaGen's VQ-16 under taming's names, inside the whole checkpoint: read from it with
// `names: hf_janus`, it decodes codes to transformers' pixels.
TEST_F(FamilyParity, JanusVqInsideTheCheckpointDecodesToTransformersPixels) {
  torch::NoGradGuard no_grad;
  auto vq = load_vq("janus",
                    "weights: " + (dir / "janus/model.safetensors.index.json").string() +
                        ", names: hf_janus, codebook_size: 512, codebook_embed_dim: 8, in_channels: 3, z_channels: 32, "
                        "ch: 32, ch_mult: [1, 1], num_res_blocks: 1, norm_groups: 32");
  EXPECT_LT(pixel_error(vq, "janus", "vq_codes", "vq_pixels"), 1e-4);
}

// Chameleon's VQGAN (Lumina-mGPT, Anole) from a file in the layout of Meta's vqgan.ckpt (written by torch.save;
// tests/tiny_families.py): with `names: chameleon`, no attention in its levels and no L2 normalisation, images
// encode to the codes transformers' Chameleon VQ gives, and codes decode to the pixels of taming's decoder.
TEST_F(FamilyParity, ChameleonVqganEncodesAndDecodesAsTheReference) {
  torch::NoGradGuard no_grad;
  auto vq = load_vq("chameleon",
                    "weights: " + (dir / "chameleon_vq/vqgan.ckpt").string() +
                        ", names: chameleon, codebook_size: 512, codebook_embed_dim: 8, codebook_l2_norm: false, "
                        "level_attention: false, in_channels: 3, z_channels: 32, ch: 32, ch_mult: [1, 1], "
                        "num_res_blocks: 1, norm_groups: 32");
  EXPECT_TRUE(torch::equal(vq->encode(ref("chameleon", "vqgan_images")), ref("chameleon", "vqgan_image_codes")));
  EXPECT_LT(pixel_error(vq, "chameleon", "vqgan_codes", "vqgan_pixels"), 1e-4);
}

// Emu3's MoVQ from a file in the layout of BAAI's Emu3-VisionTokenizer (tests/tiny_families.py, from
// transformers' Emu3VQVAE): `kind: movq, names: emu3` decodes codes to the image transformers decodes (frame 0
// of its four), its encoder skipped in the file and refused in the model. Both in float64: at these weights'
// scale float32's own rounding is about 1e-4 (transformers' float32 against its float64: 9e-5).
TEST_F(FamilyParity, Emu3MovqDecodesAsTransformers) {
  torch::NoGradGuard no_grad;
  const std::string shape =
      ", kind: movq, codebook_size: 512, codebook_embed_dim: 4, in_channels: 3, z_channels: 4, "
      "ch: 32, ch_mult: [1, 2], num_res_blocks: 1, norm_groups: 32, temporal_downsample: 4";
  auto vq = load_vq("emu3", "weights: " + (dir / "emu3_vq/model.safetensors").string() + ", names: emu3" + shape);
  vq->to(torch::kFloat64);
  EXPECT_LT(pixel_error(vq, "emu3", "movq_codes", "movq_pixels"), 1e-9);
  // The same VQ inside a checkpoint of transformers' (Emu3-Gen-hf): its names, attention as linear layers.
  auto hf = load_vq("emu3", "weights: " + (dir / "emu3_vq_hf/model.safetensors").string() + ", names: hf_emu3" + shape);
  hf->to(torch::kFloat64);
  EXPECT_LT(pixel_error(hf, "emu3", "movq_codes", "movq_pixels"), 1e-9);
  const auto err = test::error_of([&] { vq->encode(torch::zeros({1, 3, 16, 16})); });
  EXPECT_NE(err.find("Emu3's MoVQ (vq.kind movq) decodes codes only"), std::string::npos) << err;
}

// A config that does not fit its checkpoint, or whose image tokens do not fit its vocabulary: one line naming
// the file and the tensor or field.
TEST_F(FamilyParity, MismatchedConfigsAreOneLineErrors) {
  const auto load_as = [](const std::string& fam, const std::string& options) {
    return test::error_of([&] {
      const auto m = load_model_config(config(fam, options));
      load_weights(*Gpt(m.gpt, torch::TensorOptions(), false), m.gpt_weights, {}, m.gpt_keys);
    });
  };
  // Janus's checkpoint read as Chameleon's: the names of another family.
  auto err = load_as("janus", kFamilyOptions[0][1]);
  EXPECT_NE(err.find("janus/model.safetensors.index.json: tensor 'aligner.fc1.bias' does not belong to the model"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  // Chameleon's without its qk-norm, Emu3's without grouped-query attention.
  err = load_as("chameleon",
                "names: hf_llama, rope: 1d, qkv: separate, n_kv_head: 2, text_vocab_size: 600, "
                "image_token_offset: 4");
  EXPECT_NE(err.find("tensor 'layers.0.attention.k_norm.bias' does not belong to the model"), std::string::npos) << err;
  err = load_as("emu3", "names: hf_llama, rope: 1d, qkv: separate, text_vocab_size: 600, image_token_offset: 4");
  EXPECT_NE(err.find("tensor 'layers.0.attention.wk.weight' has shape [32, 64], model expects [64, 64]"),
            std::string::npos)
      << err;
  // Image tokens past the end of the text vocabulary.
  err = load_as("chameleon",
                "names: hf_llama, rope: 1d, qkv: separate, qk_norm: true, n_kv_head: 2, "
                "text_vocab_size: 600, image_token_offset: 100");
  EXPECT_NE(err.find("chameleon.yaml"), std::string::npos) << err;
  EXPECT_NE(err.find("image_token_offset"), std::string::npos) << err;
  EXPECT_NE(err.find("do not fit a text vocabulary of 600"), std::string::npos) << err;
  // A prompt longer than the model's prefix.
  err = test::error_of([] { prompt_conditions({std::vector<int64_t>(13, 7)}, {{1, 2}}, 12); });
  EXPECT_NE(err.find("a prompt of 13 tokens does not fit the model's 12 prefix positions (gpt.cls_token_num)"),
            std::string::npos)
      << err;
  // A job's prompt file for a prompted model without a template, in one line, before anything is written.
  std::ofstream(own / "prompts.txt") << "a red bus\n";
  err = test::error_of([] { plan_samples(load_model_config(config("emu3")), (own / "prompts.txt").string(), 1, 8); });
  EXPECT_NE(err.find("emu3.yaml: prompt: a prompted model (gpt.text_vocab_size) needs a prompt section"),
            std::string::npos)
      << err;
  // Prompt templates: a caption too long for the prefix is a recorded line error; a tokenizer with ids past the
  // text vocabulary, one whose image tokens are not where the config puts them, a template without {prompt}:
  // one line each, naming the file and field.
  const std::string tokenizer = (dir / "chameleon_tokenizer/tokenizer.json").string();
  auto with_prompt = [&](const std::string& tokenizer_file, const std::string& tmpl) {
    return load_model_config(config(
        "chameleon", "", "", 40,
        "prompt: {tokenizer: " + tokenizer_file + ", template: \"" + tmpl + "\", unconditional: \"<racm3:break>\"}\n"));
  };
  std::ofstream(own / "long.txt") << "a\n" << std::string(300, 'x') << " " << std::string(300, 'y') << "\n";
  const auto plan = plan_samples(with_prompt(tokenizer, "<s>{prompt}<racm3:break>"), (own / "long.txt").string(), 1, 8);
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.samples, 1);
  EXPECT_NE(plan.errors[0].message.find("long.txt:2: prompt: "), std::string::npos) << plan.errors[0].message;
  EXPECT_NE(
      plan.errors[0].message.find("tokens in the template, more than the model's prefix holds (gpt.cls_token_num 40)"),
      std::string::npos)
      << plan.errors[0].message;
  std::ofstream(own / "big.json") << R"({"model": {"type": "BPE", "vocab": {"a": 700}, "merges": []},
      "pre_tokenizer": {"type": "ByteLevel"}})";
  err = test::error_of([&] { prompt_template_for(with_prompt((own / "big.json").string(), "{prompt}")); });
  EXPECT_NE(err.find("big.json: ids up to 700 but "), std::string::npos) << err;
  EXPECT_NE(err.find("chameleon.yaml: gpt.text_vocab_size is 600 (the tokenizer of another model?)"), std::string::npos)
      << err;
  std::ofstream(own / "images.json")
      << R"({"model": {"type": "BPE", "vocab": {"IMGIMGAZ": 4, "IMGIMGBZ": 6}, "merges": []},
      "pre_tokenizer": {"type": "ByteLevel"}, "added_tokens": [{"id": 7, "content": "<racm3:break>"}]})";
  err = test::error_of([&] { prompt_template_for(with_prompt((own / "images.json").string(), "{prompt}")); });
  EXPECT_NE(err.find("images.json: model.vocab: IMGIMGBZ (image code 1) has id 6, but "), std::string::npos) << err;
  EXPECT_NE(err.find("gpt.image_token_offset + code is 5"), std::string::npos) << err;
  err = test::error_of([&] { with_prompt(tokenizer, "no placeholder"); });
  EXPECT_NE(err.find("prompt.template: must hold {prompt} exactly once"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  // An unknown family of names.
  err = load_as("emu3", "names: hf_emu4, text_vocab_size: 600");
  EXPECT_NE(err.find("names"), std::string::npos) << err;
  EXPECT_NE(err.find("hf_emu4"), std::string::npos) << err;
}

}  // namespace
}  // namespace vispec
