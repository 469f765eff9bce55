// configs/families/: the released checkpoints of the LLM families. Each config parses, its GPT builds (on the
// meta device: shapes only) with the image grid and image-token range the family's papers state, and its
// prompt section is complete (the tokenizer files themselves are read when a job is planned).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/check.h"
#include "decoding/common/decoder_config.h"
#include "io/atomic_file.h"
#include "io/job_config.h"
#include "models/gpt/gpt.h"
#include "models/model_config.h"
#include "models/vq/vq.h"

namespace vispec {

TEST(FamilyConfigs, EveryReleasedModelParsesAndBuilds) {
  const struct {
    const char* file;
    int64_t grid, image_positions, codes, first_image_token;
  } releases[] = {
      {"lumina_mgpt_7B_768.yaml", 48, 2352, 8192, 4},  // 48 rows of 48 tokens and their end-of-line tokens
      {"anole_7B.yaml", 32, 1024, 8192, 4},
      {"janus_pro_1B.yaml", 24, 576, 16384, -1},  // -1: image tokens through the generation embedding
      {"janus_pro_7B.yaml", 24, 576, 16384, -1},
      {"emu3_gen.yaml", 90, 8190, 32768, 151854},  // MoVQ: 8x downsampling
  };
  for (const auto& r : releases) {
    const auto m = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/families/" + r.file);
    EXPECT_TRUE(m.gpt.prompted()) << r.file;
    EXPECT_TRUE(m.prompt.present) << r.file;
    EXPECT_EQ(m.gpt.grid_size, r.grid) << r.file;
    EXPECT_EQ(m.gpt.vocab_size, r.codes) << r.file;
    EXPECT_EQ(m.vq.codebook_size, r.codes) << r.file;
    EXPECT_EQ(m.image_size(), r.grid * (m.vq.kind == VqKind::movq ? 8 : 16)) << r.file;
    const int64_t n = r.grid * r.grid;
    EXPECT_EQ(m.gpt.eol_token >= 0 ? n + n / r.grid : n, r.image_positions) << r.file;
    if (r.first_image_token >= 0) EXPECT_EQ(m.gpt.image_token_offset, r.first_image_token) << r.file;
    else EXPECT_EQ(m.gpt.image_input, ImageInput::aligner_mlp) << r.file;
    Gpt gpt(m.gpt, torch::TensorOptions().device(torch::kMeta));
    VqModel vq(m.vq);  // builds (its weights are read only when a job loads it)
    int64_t params = 0;
    for (const auto& p : gpt->parameters()) params += p.numel();
    EXPECT_GT(params, 1e9) << r.file;
  }
}

// jobs/families/: one job per released model with its papers' sampling settings, each naming its config.
TEST(FamilyConfigs, EveryReleasedModelHasAJob) {
  for (const char* name : {"lumina_mgpt_7B_768", "anole_7B", "janus_pro_1B", "janus_pro_7B", "emu3_gen"}) {
    const auto job = load_job_config(std::string(VISPEC_SOURCE_DIR) + "/jobs/families/" + name + ".yaml", {}, "");
    EXPECT_EQ(std::filesystem::path(job.model_config).filename(), std::string(name) + ".yaml");
    EXPECT_TRUE(std::filesystem::exists(job.model_config)) << job.model_config;
    EXPECT_TRUE(std::filesystem::exists(job.prompts_file)) << job.prompts_file;
    // The job writes out the sampling its model config carries as defaults (`sampling:`): the same numbers.
    const auto model = load_model_config(job.model_config).sampling;
    const auto written = parse_decoder(job.decoder).sampling;
    ASSERT_TRUE(model.cfg_scale && model.top_k && model.temperature && model.top_p) << name;
    EXPECT_EQ(written.cfg_scale, *model.cfg_scale) << name;
    EXPECT_EQ(written.top_k, *model.top_k) << name;
    EXPECT_EQ(written.temperature, *model.temperature) << name;
    EXPECT_EQ(written.top_p, *model.top_p) << name;
  }
}

// Janus-Pro-7B's SD draft is Janus-Pro-1B: its drafters entry, in DeepSeek's names, builds the network the 1B's
// own config builds (the draft takes everything it does not name from the 7B: prompt layout, RoPE, image tokens).
TEST(FamilyConfigs, JanusPro7BDraftsWithJanusPro1B) {
  const auto dir = std::string(VISPEC_SOURCE_DIR) + "/configs/families/";
  const auto big = load_model_config(dir + "janus_pro_7B.yaml"), small = load_model_config(dir + "janus_pro_1B.yaml");
  ASSERT_TRUE(big.has_draft_gpt());
  EXPECT_EQ(big.draft_gpt_weights, small.gpt_weights);
  EXPECT_EQ(big.draft_gpt_keys.renames, small.gpt_keys.renames);
  const auto shapes = [](const GptConfig& c) {
    std::map<std::string, std::vector<int64_t>> out;
    for (const auto& p : Gpt(c, torch::TensorOptions().device(torch::kMeta))->named_parameters())
      out[p.key()] = p.value().sizes().vec();
    return out;
  };
  EXPECT_EQ(shapes(big.draft_gpt), shapes(small.gpt));
  EXPECT_EQ(big.draft_gpt.cls_token_num, small.gpt.cls_token_num);
}

// Both drafters may be checkpoints of the target's family, in their own names; MuLo-SD's drafter of a prompted
// model may have a template of its own (its image size), and only a prompted model's may: one line naming the
// file and the field.
TEST(FamilyConfigs, DraftersMapNamesAndMuloTakesAPromptOnlyOnPromptedModels) {
  const auto dir = std::filesystem::temp_directory_path() / "vispec_drafter_names";
  std::filesystem::create_directories(dir);
  const auto config = read_file(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  const auto with = [&](const std::string& from, const std::string& to) {
    const auto at = config.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    const auto path = (dir / "model.yaml").string();
    write_file_atomic(path, std::string(config).replace(at, from.size(), to));
    return path;
  };
  const auto draft = load_model_config(with("draft_gpt.safetensors,", "draft_gpt.safetensors, names: hf_llama,"));
  EXPECT_FALSE(draft.draft_gpt_keys.renames.empty());
  const auto mulo = load_model_config(with("mulo_gpt.safetensors}", "mulo_gpt.safetensors, names: hf_llama}"));
  EXPECT_FALSE(mulo.mulo.gpt_keys.renames.empty());
  EXPECT_FALSE(mulo.mulo.own_prompt);
  const auto prompt =
      with("mulo_gpt.safetensors}", "mulo_gpt.safetensors}\n    prompt: {template: \"{prompt}\", unconditional: x}");
  try {
    load_model_config(prompt);
    ADD_FAILURE() << "a class-conditional model's MuLo-SD drafter took a prompt";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(prompt), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("drafters.mulo.prompt"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace vispec
