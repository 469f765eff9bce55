// Draft heads in the layout of the EAGLE and LANTERN repositories (models/checkpoints/eagle_repo_names.h), written at
// test time by torch (torch.save's pytorch_model.bin, as LANTERN releases its drafters) and by safetensors under DDP's
// "module." prefix (as LANTERN's trainer saves them through accelerate), from the embedded model's own head renamed
// into their names, with the target's token table as the drafter's own embed_tokens. Such a file loads as the same
// drafter, and EAGLE-2 samples the same tokens with it as with vispec's file; what does not fit is one line naming the
// file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/check.h"
#include "decoding/ar.h"
#include "decoding/eagle2.h"
#include "models/drafters/eagle_drafter.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "error_of.h"
#include "temp_dir_test.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

using test::error_of;

namespace {
const std::string kConfig = std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml";

class EagleRepoHeads : public test::TempDirTest {
 protected:
  EagleRepoHeads() : TempDirTest("eagle_repo") {}
  void SetUp() override {
    TempDirTest::SetUp();
    model = load_model_config(kConfig);
    // vispec's names -> LANTERN's (cnets_llamagen.Model's state_dict), q, k and v split out of wqkv.
    std::ofstream(dir / "make.py") << R"PY(
import sys, torch
from safetensors.torch import load_file, save_file
head, gpt = load_file(sys.argv[1]), load_file(sys.argv[2])
q, k, v = head["attention.wqkv.weight"].chunk(3, 0)
sd = {"fc.weight": head["fc.weight"], "fc.bias": head["fc.bias"],
      "layers.0.self_attn.q_proj.weight": q, "layers.0.self_attn.k_proj.weight": k,
      "layers.0.self_attn.v_proj.weight": v, "layers.0.self_attn.o_proj.weight": head["attention.wo.weight"],
      "layers.0.post_attention_layernorm.weight": head["ffn_norm.weight"],
      "layers.0.mlp.gate_proj.weight": head["feed_forward.w1.weight"],
      "layers.0.mlp.up_proj.weight": head["feed_forward.w3.weight"],
      "layers.0.mlp.down_proj.weight": head["feed_forward.w2.weight"],
      "embed_tokens.weight": gpt["tok_embeddings.weight"]}
torch.save(sd, "pytorch_model.bin")
save_file({"module." + n: t.contiguous() for n, t in sd.items()}, "model.safetensors")
torch.save(dict(sd, **{"layers.1.mlp.gate_proj.weight": sd["layers.0.mlp.gate_proj.weight"]}), "two_layers.bin")
torch.save(dict(sd, **{"fc.weight": sd["fc.weight"][:, :10]}), "narrow_fc.bin")
torch.save({"w": sd["fc.bias"]}, "other.bin")
)PY";
    const std::string cmd =
        "cd " + dir.string() + " && " + VISPEC_TORCH_PYTHON + " make.py " + model.eagle_head + " " + model.gpt_weights;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  ModelConfig model;
};

TEST_F(EagleRepoHeads, LanternsFilesLoadAsTheSameDrafterAndEagle2SamplesTheSameTokens) {
  auto ours = load_eagle_drafter(model.eagle_head, model);
  Gpt target(model.gpt);
  load_weights(*target, model.gpt_weights);
  target->eval();
  const auto codes = torch::arange(model.gpt.vocab_size, torch::kInt64);
  for (const char* file : {"pytorch_model.bin", "model.safetensors"}) {
    auto theirs = load_eagle_drafter(path(file), model);
    ASSERT_TRUE(theirs->embed_tokens) << file;
    EXPECT_TRUE(torch::equal(theirs->embed(codes, *target), ours->embed(codes, *target))) << file;
    const auto mine = state_dict(*ours);
    for (const auto& [name, t] : state_dict(*theirs))
      if (name != "embed_tokens.weight") EXPECT_TRUE(torch::equal(t, mine.at(name))) << file << ": " << name;
  }
  // EAGLE-2, sampled (T = 1) and greedy, draws the same tokens with either file.
  for (const double temperature : {1.0, 0.0}) {
    const auto p = test::guided_sampling(temperature);
    const auto r = test::requests(0, 3);
    auto decode = [&](const std::string& head) {
      Eagle2Decoder e("eagle2", target, load_eagle_drafter(head, model), p, TreeShape{4, 10, 59}, AcceptanceParams{},
                      nullptr);
      return e.decode(r).tokens;
    };
    EXPECT_TRUE(torch::equal(decode(path("pytorch_model.bin")), decode(model.eagle_head))) << "T = " << temperature;
  }
}

TEST_F(EagleRepoHeads, WhatDoesNotFitIsOneLineNamingTheFile) {
  auto e = error_of([&] { load_eagle_drafter(path("two_layers.bin"), model); });
  EXPECT_NE(e.find(path("two_layers.bin") + ": 'layers.1.mlp.gate_proj.weight': a drafter of more than one layer"),
            std::string::npos)
      << e;
  e = error_of([&] { load_eagle_drafter(path("narrow_fc.bin"), model); });
  EXPECT_NE(e.find(path("narrow_fc.bin")), std::string::npos) << e;
  EXPECT_NE(e.find("fc.weight"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  // Another vispec file, and a file of neither layout.
  e = error_of([&] { load_eagle_drafter(model.gpt_weights, model); });
  EXPECT_NE(e.find(model.gpt_weights + ": a vispec 'gpt' file, not an eagle_head file"), std::string::npos) << e;
  e = error_of([&] { load_eagle_drafter(path("other.bin"), model); });
  EXPECT_NE(e.find(path("other.bin") + ": neither a vispec eagle_head file (its metadata names no kind) nor an EAGLE "
                                       "or LANTERN drafter"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace vispec
