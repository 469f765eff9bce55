// configs/llamagen/: one model config per LlamaGen release. Each parses, and its GPT (built on the meta device:
// shapes only, no weights allocated) has the parameter count LlamaGen states for it, to the digits LlamaGen
// gives (GPT-B 111M ... GPT-3B 3.1B); the VQ-16 tokenizer has its 72M. The text-to-image XL differs from the
// class-conditional XL exactly by its condition embedder: the caption MLP (2048 -> 1280 -> 1280, no biases) in
// place of the class table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "models/gpt/gpt.h"
#include "models/model_config.h"
#include "models/vq/vq.h"

namespace vispec {

namespace {
const std::string kDir = std::string(VISPEC_SOURCE_DIR) + "/configs/llamagen/";

struct Count {
  int64_t total = 0, condition = 0;  // condition: the cls_embedding module (class table or caption MLP)
};

Count count_gpt(const std::string& config) {
  const auto model = load_model_config(kDir + config);
  Gpt gpt(model.gpt, torch::TensorOptions().device(torch::kMeta));
  Count c;
  for (const auto& p : gpt->named_parameters()) {
    c.total += p.value().numel();
    if (p.key().rfind("cls_embedding.", 0) == 0) c.condition += p.value().numel();
  }
  return c;
}

// |count - stated| within half a unit of the stated figure's last digit (111M: 110.5M..111.5M; 1.4B: 1.35B..1.45B).
void expect_stated(int64_t count, double stated, double unit, const std::string& what) {
  EXPECT_LE(std::abs(double(count) - stated), unit / 2)
      << what << ": " << count << " parameters, LlamaGen states " << stated;
}
}  // namespace

TEST(LlamaGenConfigs, EveryReleasedGptHasLlamaGensParameterCount) {
  const struct {
    const char* file;
    double stated, unit;
  } releases[] = {{"c2i_B_256.yaml", 111e6, 1e6}, {"c2i_B_384.yaml", 111e6, 1e6},  {"c2i_L_256.yaml", 343e6, 1e6},
                  {"c2i_L_384.yaml", 343e6, 1e6}, {"c2i_XL_384.yaml", 775e6, 1e6}, {"c2i_XXL_384.yaml", 1.4e9, 1e8},
                  {"c2i_3B_384.yaml", 3.1e9, 1e8}};
  for (const auto& r : releases) expect_stated(count_gpt(r.file).total, r.stated, r.unit, r.file);
}

TEST(LlamaGenConfigs, TextToImageXlIsTheXlWithACaptionMlp) {
  const auto c2i = count_gpt("c2i_XL_384.yaml");
  for (const char* file : {"t2i_XL_stage1_256.yaml", "t2i_XL_stage2_512.yaml"}) {
    const auto t2i = count_gpt(file);
    EXPECT_EQ(t2i.condition, 2048 * 1280 + 1280 * 1280) << file;
    EXPECT_EQ(t2i.total - t2i.condition, c2i.total - c2i.condition) << file;
    EXPECT_EQ(load_model_config(kDir + file).gpt.cls_token_num, 120) << file;
  }
  EXPECT_EQ(c2i.condition, 1001 * 1280);  // 1000 classes and the null class
}

TEST(LlamaGenConfigs, Vq16HasLlamaGensParameterCount) {
  const auto model = load_model_config(kDir + "c2i_B_256.yaml");
  VqModel vq(model.vq);
  int64_t count = 0;
  for (const auto& p : vq->parameters()) count += p.numel();
  expect_stated(count, 72e6, 1e6, "vq_ds16_c2i");
  EXPECT_EQ(model.vq.codebook_size, 16384);
  EXPECT_EQ(model.vq.downsample(), 16);
}

// Each release carries the sampling its own sampler uses (sample_c2i.py: cfg_scale 4.0, top_k 2000;
// sample_t2i.py: 7.5, 1000; both temperature 1.0, top_p 1.0), which a job's decoder takes for the fields it
// leaves out. A value out of range is one line naming the config's line and field.
TEST(LlamaGenConfigs, EveryReleaseCarriesItsSamplersDefaults) {
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    if (entry.path().extension() != ".yaml") continue;
    const auto file = entry.path().filename().string();
    const auto s = load_model_config(entry.path().string()).sampling;
    const bool t2i = file.rfind("t2i_", 0) == 0;
    ASSERT_TRUE(s.cfg_scale && s.top_k && s.temperature && s.top_p) << file;
    EXPECT_EQ(*s.cfg_scale, t2i ? 7.5 : 4.0) << file;
    EXPECT_EQ(*s.top_k, t2i ? 1000 : 2000) << file;
    EXPECT_EQ(*s.temperature, 1.0) << file;
    EXPECT_EQ(*s.top_p, 1.0) << file;
  }
  const auto dir = std::filesystem::temp_directory_path() / "vispec_sampling_defaults";
  std::filesystem::create_directories(dir);
  std::ifstream in(kDir + "c2i_B_256.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("top_p: 1.0}");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "top_p: 1.5}");
  const auto bad = (dir / "c2i_B_256.yaml").string();
  std::ofstream(bad) << text;
  try {
    load_model_config(bad);
    ADD_FAILURE() << "top_p 1.5 accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    const auto line = 1 + std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n');
    EXPECT_NE(what.find(bad + ":" + std::to_string(line) + ":"), std::string::npos) << what;
    EXPECT_NE(what.find("sampling.top_p"), std::string::npos) << what;
    EXPECT_NE(what.find("must be in (0, 1]"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace vispec
