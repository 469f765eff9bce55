// Your weights in one line: a job replaces any weight path of its model config (`model: {config: ...,
// drafters: {eagle_head: ...}}` or --set model.drafters.eagle_head=...), relative to the job file; a config's
// relative weight paths are relative to its `weights_root:` ($VISPEC_MODELS allowed) or its own directory; a
// weight file missing when a job is planned is one line naming the line (the config's or the job's) that
// asked for it, exit 2, nothing written.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli.h"
#include "io/job_config.h"
#include "temp_dir_test.h"
#include "workers/job_plan.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
const std::string kConfig = std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml";
const std::string kWeights = std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist/";

class WeightPaths : public test::TempDirTest {
 protected:
  WeightPaths() : TempDirTest("weights") {}
  void SetUp() override {
    TempDirTest::SetUp();
    write("prompts.txt", "trouser\n");
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }
  std::string job(const std::string& model, const std::string& decoder = "ar") const {
    return "model: " + model + "\nprompts: prompts.txt\ndecoder: {name: " + decoder +
           "}\nout: " + (dir / "out").string() + "\n";
  }
  // `vispec run` refuses the job with one line (exit 2, nothing written); the line.
  std::string refused(const std::string& args) const {
    const auto r = test::run_vispec("run " + (dir / "job.yaml").string() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << r.text;
    EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
    EXPECT_FALSE(fs::exists(dir / "out"));
    return r.text;
  }
};

TEST_F(WeightPaths, EveryWeightPathOfTheConfigIsReplacedFromTheJobAndKeptInItsSnapshot) {
  fs::create_directories(dir / "mine");
  for (const char* f :
       {"gpt", "vq", "classifier", "draft_gpt", "eagle_head", "ssd_heads", "mulo_gpt", "mulo_resamplers"})
    fs::copy_file(kWeights + f + ".safetensors", dir / "mine" / (std::string(f) + ".safetensors"));
  write("job.yaml",
        job("{config: " + kConfig +
            ", gpt: {weights: mine/gpt.safetensors}, vq: {weights: mine/vq.safetensors}, "
            "classifier: {weights: mine/classifier.safetensors}, drafters: {eagle_head: mine/eagle_head.safetensors, "
            "ssd_heads: mine/ssd_heads.safetensors, gpt: {weights: mine/draft_gpt.safetensors}, mulo: {gpt: "
            "{weights: mine/mulo_gpt.safetensors}, resamplers: {weights: mine/mulo_resamplers.safetensors}}}}"));
  const auto mine = [&](const char* f) { return (dir / "mine" / (std::string(f) + ".safetensors")).string(); };
  const auto check = [&](const JobPlan& p) {
    EXPECT_EQ(p.model.gpt_weights, mine("gpt"));
    EXPECT_EQ(p.model.vq_weights, mine("vq"));
    EXPECT_EQ(p.model.classifier_weights, mine("classifier"));
    EXPECT_EQ(p.model.eagle_head, mine("eagle_head"));
    EXPECT_EQ(p.model.ssd_heads, mine("ssd_heads"));
    EXPECT_EQ(p.model.draft_gpt_weights, mine("draft_gpt"));
    EXPECT_EQ(p.model.mulo.gpt_weights, mine("mulo_gpt"));
    EXPECT_EQ(p.model.mulo.resamplers_weights, mine("mulo_resamplers"));
    EXPECT_EQ(p.model.draft_gpt.dim, 64);  // the architecture stays the config's
  };
  const auto plan = plan_job((dir / "job.yaml").string());
  check(plan);
  // The run's job.yaml (what `vispec resume` reads) names every replacement, absolute.
  write("snapshot.yaml", resolved_job_yaml(plan.job, plan.decoder.numbers, plan.decoder.words));
  check(plan_job((dir / "snapshot.yaml").string()));
  // --set, relative to the job file as every path of a job (but out).
  fs::create_directories(dir / "other");
  fs::copy_file(kWeights + std::string("eagle_head.safetensors"), dir / "other" / "head.safetensors");
  const auto set = plan_job((dir / "job.yaml").string(), {"model.drafters.eagle_head=other/head.safetensors"});
  EXPECT_EQ(set.model.eagle_head, (dir / "other" / "head.safetensors").string());
  // And on the shorthand form of `model:`.
  write("short.yaml", job(kConfig));
  EXPECT_EQ(
      plan_job((dir / "short.yaml").string(), {"model.drafters.eagle_head=other/head.safetensors"}).model.eagle_head,
      (dir / "other" / "head.safetensors").string());
}

TEST_F(WeightPaths, AMissingWeightFileIsOneLineNamingTheLineThatAskedForIt) {
  // The job's replacement.
  write("job.yaml", job("{config: " + kConfig + ", drafters: {eagle_head: nothere.safetensors}}", "eagle2"));
  auto line = refused("");
  EXPECT_NE(line.find("job.yaml:1: model.drafters.eagle_head: " + (dir / "nothere.safetensors").string() +
                      ": no such file (a relative path is relative to the job file's directory)"),
            std::string::npos)
      << line;
  write("job.yaml", job(kConfig, "eagle2"));
  line = refused("--set model.drafters.eagle_head=gone.safetensors");
  EXPECT_NE(line.find("--set model.drafters.eagle_head: "), std::string::npos) << line;
  // A config copied away from its weights: its own line.
  std::string config;
  {
    std::ifstream in(kConfig);
    config.assign(std::istreambuf_iterator<char>(in), {});
  }
  write("copied.yaml", config);
  write("job.yaml", job((dir / "copied.yaml").string()));
  line = refused("");
  EXPECT_NE(line.find((dir / "copied.yaml").string() + ":9: gpt.weights: " + (dir / "fmnist/gpt.safetensors").string() +
                      ": no such file (a relative path is relative to the model config's directory)"),
            std::string::npos)
      << line;
  // ... which one line of weights_root mends; from $VISPEC_MODELS, and that variable unset.
  write("rooted.yaml", "weights_root: " + std::string(VISPEC_SOURCE_DIR) + "/configs\n" + config);
  write("job.yaml", job((dir / "rooted.yaml").string()));
  EXPECT_EQ(plan_job((dir / "job.yaml").string()).model.gpt_weights, kWeights + "gpt.safetensors");
  write("env.yaml", "weights_root: $VISPEC_MODELS\n" + config);
  write("job.yaml", job((dir / "env.yaml").string()));
  ::setenv("VISPEC_MODELS", (std::string(VISPEC_SOURCE_DIR) + "/configs").c_str(), 1);
  EXPECT_EQ(plan_job((dir / "job.yaml").string()).model.gpt_weights, kWeights + "gpt.safetensors");
  ::unsetenv("VISPEC_MODELS");
  line = refused("");
  EXPECT_NE(line.find("env.yaml:10: gpt.weights: $VISPEC_MODELS/fmnist/gpt.safetensors: VISPEC_MODELS is not set "
                      "(" +
                      (dir / "env.yaml").string() + ":1: weights_root names it)"),
            std::string::npos)
      << line;
}

TEST_F(WeightPaths, WhatAJobCannotReplaceIsOneLine) {
  // A section the config lacks: the architecture comes from the config, so a job cannot add a draft GPT.
  write("bare.yaml",
        "name: bare\ngpt: {weights: " + kWeights +
            "gpt.safetensors, vocab_size: 512, dim: 128, n_layer: 6, "
            "n_head: 4, multiple_of: 64, grid_size: 16, num_classes: 10, cls_token_num: 1}\nvq: {weights: " +
            kWeights +
            "vq.safetensors, codebook_size: 512, codebook_embed_dim: 8, in_channels: 1, z_channels: 32, "
            "ch: 32, ch_mult: [1, 2], num_res_blocks: 1, norm_groups: 8}\n");
  write("job.yaml", job("{config: bare.yaml, drafters: {gpt: {weights: x.safetensors}}}", "sd"));
  auto line = refused("");
  EXPECT_NE(line.find("job.yaml:1: model.drafters.gpt.weights: " + (dir / "bare.yaml").string() +
                      " has no drafters.gpt section"),
            std::string::npos)
      << line;
  // A field that is no weight path, or a misspelt one: the fields it could be.
  write("job.yaml", job(kConfig));
  line = refused("--set model.gpt.dim=3");
  EXPECT_NE(line.find("--set model.gpt.dim: unknown field (known: weights)"), std::string::npos) << line;
  line = refused("--set model.drafters.eagle=x");
  EXPECT_NE(line.find("unknown field (known: eagle_head, ssd_heads, gpt, mulo)"), std::string::npos) << line;
}

}  // namespace
}  // namespace vispec
