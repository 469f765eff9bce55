// Bad job input: `vispec run` exits non-zero with ONE line naming file, line and field, and writes nothing
// (except a bad prompt line, which is recorded while the job goes on).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "cli.h"
#include "decoding/common/decoder_registry.h"
#include "io/atomic_file.h"
#include "io/job_config.h"
#include "io/png.h"
#include "io/prompts.h"
#include "models/checkpoints/safetensors.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
test::CliOutcome run(const std::string& args) { return test::run_vispec(args); }
}  // namespace

// Outside the anonymous namespace: the tests derived from it are not in one (a unity batch warns otherwise).
class JobErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("vispec_jobs_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    write("prompts.txt", "trouser\n# a comment\n\nbag\n");
  }
  void TearDown() override { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; }
  std::string job(const std::string& extra_lines, bool with_prompts = true) {
    std::string s = "model: " + std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml\n";
    if (with_prompts) s += "prompts: prompts.txt\n";
    s += "out: " + (dir / "out").string() + "\n" + extra_lines;
    return s;
  }
  // The embedded model's config with absolute weight paths, to edit and write beside a job.
  static std::string embedded_model() {
    const std::string src = std::string(VISPEC_SOURCE_DIR) + "/configs/";
    std::string config = read_file(src + "fmnist.yaml");
    for (size_t at = config.find(" fmnist/"); at != std::string::npos; at = config.find(" fmnist/", at + 1))
      config.replace(at + 1, 0, src);
    return config;
  }
  // Runs the job and checks the common contract: exit code 2, one line, nothing written.
  std::string expect_rejected(const std::string& job_text) {
    write("job.yaml", job_text);
    const auto r = run("run " + (dir / "job.yaml").string());
    EXPECT_EQ(r.exit_code, 2) << r.text;
    EXPECT_EQ(std::count(r.text.begin(), r.text.end(), '\n'), 1) << r.text;
    EXPECT_FALSE(fs::exists(dir / "out")) << "output written for a bad job";
    return r.text;
  }
  // A good job run with one bad `--set key=value`: the same contract; returns the line.
  std::string expect_override_rejected(const std::string& assignment) {
    write("job.yaml", job("decoder: {name: ar}\n"));
    const auto r = run("run " + (dir / "job.yaml").string() + " --set '" + assignment + "'");
    EXPECT_EQ(r.exit_code, 2) << r.text;
    EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
    EXPECT_FALSE(fs::exists(dir / "out")) << "output written for a bad override";
    return r.text;
  }
  fs::path dir;
};

TEST_F(JobErrors, MissingField) {
  const auto err = expect_rejected(job("decoder: {name: ar}\n", /*with_prompts=*/false));
  EXPECT_NE(err.find("job.yaml"), std::string::npos) << err;
  EXPECT_NE(err.find("prompts: missing field"), std::string::npos) << err;
}

TEST_F(JobErrors, UnknownDecoderNamesTheLine) {
  const auto err = expect_rejected(job("decoder:\n  name: warp_drive\n"));
  EXPECT_NE(err.find("job.yaml:5: decoder.name: unknown decoder 'warp_drive'"), std::string::npos) << err;
}

TEST_F(JobErrors, UnknownDecoderParameterAndBadValue) {
  auto err = expect_rejected(job("decoder:\n  name: ar\n  temprature: 0.5\n"));
  EXPECT_NE(err.find("job.yaml:6: decoder.temprature: unknown parameter"), std::string::npos) << err;
  err = expect_rejected(job("decoder:\n  name: ar\n  top_k: ten\n"));
  EXPECT_NE(err.find("job.yaml:6: decoder.top_k: expected a number, got 'ten'"), std::string::npos) << err;
  err = expect_rejected(job("decoder:\n  name: ar\n  top_p: 1.5\n"));
  EXPECT_NE(err.find("job.yaml:6: decoder.top_p: must be in (0, 1]"), std::string::npos) << err;
}

// A field of another acceptance rule than the chosen one changes nothing: refused in one line naming it and the
// rules that use it; given with its default value (as a run's kept job names every field) it is read.
TEST_F(JobErrors, AFieldOfAnotherAcceptanceRuleIsRefused) {
  auto err = expect_rejected(job("decoder:\n  name: sd\n  lambda: 5\n"));
  EXPECT_NE(err.find("job.yaml:6: decoder.lambda: not read by accept: exact (only lanternpp uses it)"),
            std::string::npos)
      << err;
  err = expect_rejected(job("decoder:\n  name: eagle2\n  accept: lantern\n  budget: 2\n"));
  EXPECT_NE(err.find("job.yaml:7: decoder.budget: not read by accept: lantern (only coolsd uses it)"),
            std::string::npos)
      << err;
  err = expect_rejected(job("decoder:\n  name: sd\n  accept: coolsd\n  delta: 0.2\n"));
  EXPECT_NE(err.find("decoder.delta: not read by accept: coolsd (only lantern uses it)"), std::string::npos) << err;
  const DecoderSpec defaults{"sd", "x", {{"lambda", 3.0}, {"k", 1000}}, {}, {}};
  EXPECT_NO_THROW(parse_decoder(defaults));
  const DecoderSpec used{"sd", "x", {{"lambda", 5.0}}, {{"accept", "lanternpp"}}, {}};
  EXPECT_DOUBLE_EQ(parse_decoder(used).accept.lambda, 5.0);
}

TEST_F(JobErrors, UnreadablePromptsFile) {
  auto text = job("decoder: {name: ar}\n");
  text.replace(text.find("prompts.txt"), 11, "nowhere.txt");
  const auto err = expect_rejected(text);
  EXPECT_NE(err.find("nowhere.txt: cannot read prompts file"), std::string::npos) << err;
}

// A path the file system refuses to look at (a name longer than it allows: found by fuzz_job_config) is that
// field's one-line error, never an uncaught exception (exit 3), whether it is the model config or the prompts.
TEST_F(JobErrors, APathTooLongForTheFileSystemIsTheFieldsError) {
  const std::string huge(300, 'x');
  auto text = job("decoder: {name: ar}\n");
  const auto model_at = text.find(VISPEC_SOURCE_DIR);
  text.replace(model_at, text.find('\n', model_at) - model_at, huge + ".yaml");
  auto err = expect_rejected(text);
  EXPECT_NE(err.find("model"), std::string::npos) << err;
  EXPECT_NE(err.find("File name too long"), std::string::npos) << err;
  text = job("decoder: {name: ar}\n");
  text.replace(text.find("prompts.txt"), 11, huge + ".txt");
  err = expect_rejected(text);
  EXPECT_NE(err.find(huge), std::string::npos) << err;
}

// A bad prompt line does not stop a job of millions: it is recorded, the rest is generated, the exit code says so.
TEST_F(JobErrors, UnknownClassNameIsRecordedAndTheJobGoesOn) {
  write("prompts.txt", "# socks are not in Fashion-MNIST\nsock\ntrouser\n");
  write("job.yaml", job("decoder: {name: ar}\nimages_per_prompt: 1\nthreads: 1\n"));
  const auto r = run("run " + (dir / "job.yaml").string());
  EXPECT_EQ(r.exit_code, 5) << r.text;
  const auto errors = read_file((dir / "out/errors.jsonl").string());
  EXPECT_EQ(std::count(errors.begin(), errors.end(), '\n'), 1) << errors;
  const auto e = nlohmann::json::parse(errors.substr(0, errors.find('\n')));
  EXPECT_EQ(e["line"], 2);
  EXPECT_EQ(e["field"], "prompt");
  EXPECT_NE(e["file"].get<std::string>().find("prompts.txt"), std::string::npos);
  EXPECT_NE(e["error"].get<std::string>().find("prompts.txt:2: prompt: unknown class name 'sock'"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out/images/00000000.png")) << "sample of the bad prompt";
  EXPECT_TRUE(fs::exists(dir / "out/images/00000001.png")) << "the good prompt keeps its sample id";
}

// ... and a job of bad lines alone is a mistake in the job (captions for a class model, say): one line, exit 2,
// nothing written, not a run of empty units.
TEST_F(JobErrors, APromptFileWithNoLineTheModelTakesIsTheJobsError) {
  write("prompts.txt", "# none of these is a Fashion-MNIST class\nsock\na red bus\nglove\n");
  auto err = expect_rejected(job("decoder: {name: ar}\n"));
  EXPECT_NE(err.find("prompts.txt:2: prompt: unknown class name 'sock'"), std::string::npos) << err;
  EXPECT_NE(err.find("(and so do the other 2 prompt lines"), std::string::npos) << err;
  write("prompts.txt", "sock\n");
  err = expect_rejected(job("decoder: {name: ar}\n"));
  EXPECT_NE(err.find("prompts.txt:1: prompt: unknown class name 'sock'"), std::string::npos) << err;
}

// The log names the first five bad lines and counts the rest: errors.jsonl holds them all.
TEST_F(JobErrors, ManyBadLinesAreLoggedFiveAndCounted) {
  std::string prompts = "trouser\n";
  for (int i = 0; i < 8; ++i) prompts += "sock\n";
  write("prompts.txt", prompts);
  write("job.yaml", job("decoder: {name: ar}\nimages_per_prompt: 1\nthreads: 1\n"));
  const auto r = run("run " + (dir / "job.yaml").string());
  EXPECT_EQ(r.exit_code, 5) << r.text;
  EXPECT_EQ(test::count_lines(read_file((dir / "out/errors.jsonl").string())), 8);
  size_t named = 0;
  const std::string logged = "[warning] skipped: ";
  for (size_t at = r.text.find(logged); at != std::string::npos; at = r.text.find(logged, at + 1)) ++named;
  EXPECT_EQ(named, 6u) << r.text;  // five lines and the count
  EXPECT_NE(r.text.find("skipped: 3 more prompt lines, listed in"), std::string::npos) << r.text;
  EXPECT_TRUE(fs::exists(dir / "out/images/00000000.png"));
}

TEST_F(JobErrors, UnwritableOutputDirectory) {
  write("job.yaml", job("decoder: {name: ar}\n"));
  const auto r = run("run " + (dir / "job.yaml").string() + " --out /dev/null/out");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("/dev/null/out: cannot create directory"), std::string::npos) << r.text;
}

// A drafter's weights that do not fit are the job's error before anything is written, like the target's
// (found by a worker, they would leave a journal behind, and the rerun after the fix would need --new).
TEST_F(JobErrors, ADrafterFileThatDoesNotFitIsRefusedBeforeAnythingIsWritten) {
  const std::string src = std::string(VISPEC_SOURCE_DIR) + "/configs/";
  std::string config = embedded_model();  // absolute weight paths
  for (const auto& [decoder, drafter, other] :
       {std::tuple<std::string, std::string, std::string>{"eagle2", "eagle_head", "ssd_heads"},
        {"ssd", "ssd_heads", "eagle_head"},
        {"sd", "draft_gpt", "gpt"}}) {
    std::string c = config;
    const auto file = src + "fmnist/" + drafter + ".safetensors";
    c.replace(c.find(file), file.size(), src + "fmnist/" + other + ".safetensors");
    write("model.yaml", c);
    std::string text = job("decoder: {name: " + decoder + "}\n");
    text.replace(text.find(src + "fmnist.yaml"), (src + "fmnist.yaml").size(), (dir / "model.yaml").string());
    const auto err = expect_rejected(text);
    EXPECT_NE(err.find(other + ".safetensors"), std::string::npos) << decoder << ": " << err;
  }
}

TEST_F(JobErrors, UnknownTopLevelFieldAndBadSetOverride) {
  auto err = expect_rejected(job("decoder: {name: ar}\nimages_per_promt: 3\n"));
  EXPECT_NE(err.find("job.yaml:5: images_per_promt: unknown field"), std::string::npos) << err;
  err = expect_override_rejected("decoder.temperature=-1");
  EXPECT_NE(err.find("--set decoder.temperature: must be >= 0"), std::string::npos) << err;
}

TEST_F(JobErrors, ModelMapAndDtypeAreChecked) {
  const std::string model = std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml";
  auto err = expect_rejected("model: {config: " + model + ", dtype: fp8}\nprompts: prompts.txt\nout: " +
                             (dir / "out").string() + "\ndecoder: {name: ar}\n");
  EXPECT_NE(err.find("job.yaml:1: model.dtype: expected fp32, bf16 or fp16, got 'fp8'"), std::string::npos) << err;
  err = expect_rejected("model: {config: " + model + ", precision: bf16}\nprompts: prompts.txt\nout: " +
                        (dir / "out").string() + "\ndecoder: {name: ar}\n");
  EXPECT_NE(err.find("model.precision: unknown field"), std::string::npos) << err;
  err = expect_override_rejected("model.dtype=int8");
  EXPECT_NE(err.find("model.dtype: expected fp32, bf16 or fp16, got 'int8'"), std::string::npos) << err;
}

// Every count a user sets has bounds, checked at planning in one line: a typo must not exhaust the machine
// (threads: 100000 took every process id), nor a product overflow (2^62 x 4 prompts wrapped to "0 samples").
TEST_F(JobErrors, EveryCountIsBounded) {
  for (const auto& [field, message] : std::vector<std::pair<std::string, std::string>>{
           {"threads: 100000", "job.yaml:5: threads: must be 0 to 1024, got 100000"},
           {"threads: -5", "threads: must be 0 to 1024, got -5"},
           {"images_per_prompt: 1000000000000", "images_per_prompt: must be 1 to 100000000000, got 1000000000000"},
           {"images_per_prompt: 4611686018427387904", "images_per_prompt: must be 1 to 100000000000"},
           {"batch_size: 100000000", "batch_size: must be 1 to 4096"},
           {"unit_size: 0", "unit_size: must be 1 to 1000000, got 0"}}) {
    const auto err = expect_rejected(job("decoder: {name: ar}\n" + field + "\n"));
    EXPECT_NE(err.find(message), std::string::npos) << field << ": " << err;
  }
  // The plan's products, named at the prompt line that passes them.
  write("prompts.txt", "trouser\nbag\nshirt\n");
  auto err = expect_rejected(job("decoder: {name: ar}\nimages_per_prompt: 50000000000\nunit_size: 1000000\n"));
  EXPECT_NE(err.find("prompts.txt:3: 3 prompts x images_per_prompt 50000000000 pass the 100000000000 sample ids"),
            std::string::npos)
      << err;
  err = expect_rejected(job("decoder: {name: ar}\nimages_per_prompt: 6000000\nunit_size: 1\n"));
  EXPECT_NE(err.find("prompts.txt:2: 12000000 sample ids in units of unit_size 1 pass the 10000000 units"),
            std::string::npos)
      << err;
  // Every command's --threads.
  for (const char* command :
       {"bench --threads 100000", "verify /nonexistent --threads 100000", "train gpt --threads -1"}) {
    const auto r = run(command);
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.text;
    EXPECT_EQ(test::count_lines(r.text), 1) << command << ": " << r.text;
    EXPECT_NE(r.text.find("--threads"), std::string::npos) << command << ": " << r.text;
  }
  // A model config's sizes: at least 1 (counts of options at least 0), at most what the largest real models have,
  // many times over; every whole-number field of the GPT and VQ sections is held to its bounds.
  std::string model = embedded_model();
  struct BadSize {
    std::string from, to, says;
  };
  const std::vector<BadSize> bad_sizes = {
      {"dim: 128", "dim: 1000000000", "dim must be at most 65536"},
      {"grid_size: 16", "grid_size: 1000000", "grid_size must be at most 512"},
      {"dim: 128", "dim: 0", "dim must be at least 1"},
      {"dim: 128", "dim: 128\n  n_kv_head: -2", "n_kv_head must not be negative"},
      {"dim: 128", "dim: 128\n  image_mlp_dim: 99999999", "image_mlp_dim must be at most 1048576, got 99999999"},
      // the VQ section's, from its own table
      {"codebook_size: 512", "codebook_size: 100000000", "codebook_size must be at most 4194304, got 100000000"},
      {"z_channels: 32", "z_channels: 0", "z_channels must be at least 1"},
      {"num_res_blocks: 1", "num_res_blocks: -1", "num_res_blocks must not be negative"}};
  for (const auto& b : bad_sizes) {
    auto bad = model;
    bad.replace(bad.find(b.from), b.from.size(), b.to);
    write("model.yaml", bad);
    err = expect_rejected("model: " + (dir / "model.yaml").string() +
                          "\nprompts: prompts.txt\nout: " + (dir / "out").string() + "\ndecoder: {name: ar}\n");
    EXPECT_NE(err.find("model.yaml:"), std::string::npos) << err;
    EXPECT_NE(err.find(b.says), std::string::npos) << b.to << ": " << err;
  }
}

// Every section has a type: a model config's `sampling:` written as a list or a value was read as absent (cfg_scale
// 1, not the model's 2), and an empty `distill:` distilled nothing; each is one line naming the file, line and
// field now, nothing written.
TEST_F(JobErrors, ASectionOfTheWrongKindOrEmptyIsOneLine) {
  std::string model = embedded_model();
  const std::string sampling = "sampling: {cfg_scale: 2.0}";
  ASSERT_NE(model.find(sampling), std::string::npos);
  const auto at =
      "model.yaml:" + std::to_string(std::count(model.begin(), model.begin() + long(model.find(sampling)), '\n') + 1);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"sampling: [2.0]",
       at + ": sampling: expected a map of fields (known: cfg_scale, temperature, top_k, top_p), got a list"},
      {"sampling: 2.0",
       at + ": sampling: expected a map of fields (known: cfg_scale, temperature, top_k, top_p), got a value"},
      {"sampling:", at + ": sampling: an empty section: give its fields (sampling: {} for its defaults)"}};
  for (const auto& [line, says] : bad) {
    auto text = model;
    text.replace(text.find(sampling), sampling.size(), line);
    write("model.yaml", text);
    const auto err = expect_rejected("model: " + (dir / "model.yaml").string() + "\nprompts: prompts.txt\nout: " +
                                     (dir / "out").string() + "\ndecoder: {name: ar}\n");
    EXPECT_NE(err.find(says), std::string::npos) << line << ": " << err;
  }
  auto err = expect_rejected(job("decoder: {name: ar}\ndistill:\n"));
  EXPECT_NE(err.find("job.yaml:5: distill: an empty section: give its fields (distill: {} for its defaults), or "
                     "remove the line"),
            std::string::npos)
      << err;
}

// --set model=PATH replaces the job's model whether the file writes it as a path or as a map, and combines with
// --set model.dtype in either order (a scalar model used to be refused: "expected a model config path").
TEST_F(JobErrors, SetModelTakesAPathInEitherForm) {
  const std::string other = (dir / "other.yaml").string();
  write("other.yaml", "");
  const std::string shipped = std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml";
  const std::string model_lines[] = {"model: " + shipped + "\n", "model: {config: " + shipped + ", dtype: fp16}\n"};
  for (const auto& model_line : model_lines) {
    write("job.yaml", model_line + "prompts: prompts.txt\nout: out\ndecoder: {name: ar}\n");
    const auto path = (dir / "job.yaml").string();
    auto job = load_job_config(path, {"model=" + other}, "");
    EXPECT_EQ(job.model_config, other) << model_line;
    EXPECT_EQ(job.model_dtype, "") << model_line;
    job = load_job_config(path, {"model=" + other, "model.dtype=bf16"}, "");
    EXPECT_EQ(job.model_config, other) << model_line;
    EXPECT_EQ(job.model_dtype, "bf16") << model_line;
    job = load_job_config(path, {"model.dtype=bf16", "model=" + other}, "");  // the later --set wins whole
    EXPECT_EQ(job.model_config, other) << model_line;
    EXPECT_EQ(job.model_dtype, "") << model_line;
  }
}

// cfg_scale 1e300 turns the guided logits into infinities and NaNs, which used to be sampled as token 0 with
// exit 0: now the unit fails with one line, for AR and for a speculative decoder alike, and no image is kept.
TEST_F(JobErrors, NonFiniteLogitsFailTheUnitInOneLine) {
  for (const std::string decoder : {"ar", "eagle2"}) {
    write("job.yaml", job("decoder: {name: " + decoder + ", cfg_scale: 1.0e300}\nimages_per_prompt: 1\n"));
    const auto r = run("run " + (dir / "job.yaml").string() + " --new");
    EXPECT_EQ(r.exit_code, 2) << decoder << ": " << r.text;
    size_t errors = 0;  // progress lines go to stderr too: one error line
    for (size_t at = r.text.find("vispec: error"); at != std::string::npos; at = r.text.find("vispec: error", at + 1))
      ++errors;
    EXPECT_EQ(errors, 1u) << decoder << ": " << r.text;
    EXPECT_NE(r.text.find("non-finite logits (NaN or infinity) while decoding"), std::string::npos) << r.text;
    EXPECT_TRUE(fs::is_empty(dir / "out" / "images")) << decoder;
  }
}

// A NaN in the VQ decoder's weights would make every image black with exit 0: the unit fails in one line
// instead, and no image of it is written.
TEST_F(JobErrors, NonFinitePixelsFailTheUnitInOneLine) {
  const std::string src = std::string(VISPEC_SOURCE_DIR) + "/configs/";
  std::string config = embedded_model();  // absolute weight paths
  auto vq = read_safetensors(src + "fmnist/vq.safetensors");
  for (auto& [name, t] : vq)
    if (name.find("decoder") != std::string::npos && t.dim() == 4) {
      t = t.clone();
      t.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
      break;
    }
  write_safetensors((dir / "vq.safetensors").string(), vq);
  const auto file = src + "fmnist/vq.safetensors";
  config.replace(config.find(file), file.size(), (dir / "vq.safetensors").string());
  write("model.yaml", config);
  std::string text = job("decoder: {name: ar}\nimages_per_prompt: 1\n");
  text.replace(text.find(src + "fmnist.yaml"), (src + "fmnist.yaml").size(), (dir / "model.yaml").string());
  write("job.yaml", text);
  const auto r = run("run " + (dir / "job.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_NE(r.text.find("the VQ decoder's pixels are not finite"), std::string::npos) << r.text;
  EXPECT_TRUE(fs::is_empty(dir / "out" / "images"));
}

// A NaN in MuLo-SD's resamplers would make every draft one flat token, which its pooled-mass verification accepts:
// images of one token with exit 0. The watch on the resamplers' latents fails the unit in one line naming their
// file instead, and no image of it is written.
TEST_F(JobErrors, NonFiniteResamplerOutputsFailTheUnitInOneLineNamingTheirFile) {
  const std::string src = std::string(VISPEC_SOURCE_DIR) + "/configs/";
  std::string config = embedded_model();  // absolute weight paths
  auto weights = read_safetensors(src + "fmnist/mulo_resamplers.safetensors");
  int poisoned = 0;  // the first matrix of each resampler: both directions' outputs are NaN
  for (const char* which : {"down", "up"})
    for (auto& [name, t] : weights)
      if (name.find(which) != std::string::npos && t.dim() >= 2) {
        t = t.clone();
        t.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
        ++poisoned;
        break;
      }
  ASSERT_EQ(poisoned, 2);
  const auto poisoned_file = (dir / "mulo_resamplers.safetensors").string();
  write_safetensors(poisoned_file, weights);
  const auto file = src + "fmnist/mulo_resamplers.safetensors";
  config.replace(config.find(file), file.size(), poisoned_file);
  write("model.yaml", config);
  std::string text = job("decoder: {name: mulo_sd}\nimages_per_prompt: 1\n");
  text.replace(text.find(src + "fmnist.yaml"), (src + "fmnist.yaml").size(), (dir / "model.yaml").string());
  write("job.yaml", text);
  const auto r = run("run " + (dir / "job.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_NE(r.text.find("MuLo-SD's resamplers' outputs are not finite (NaN or infinity) while decoding: a NaN in "
                        "their weights (" +
                        poisoned_file + ")?"),
            std::string::npos)
      << r.text;
  EXPECT_TRUE(fs::is_empty(dir / "out" / "images"));
}

// A trainer's token cache proves by its recorded source what it holds, whatever the source: a rerun on
// Fashion-MNIST in the run directory of an image folder's training is refused in one line, where it trained on
// the folder's tokens without a word.
TEST_F(JobErrors, ATokenCacheOfAnImageFolderIsNotTakenForFashionMnist) {
  write("model.yaml", embedded_model());
  for (const char* cls : {"a", "b"})
    for (int i = 0; i < 3; ++i) {
      fs::create_directories(dir / "images" / cls);
      write_png((dir / "images" / cls / (std::to_string(i) + ".png")).string(),
                std::vector<uint8_t>(28 * 28, uint8_t(40 * i + (cls[0] == 'a' ? 0 : 100))), 28, 28, 1);
    }
  const auto train = "train gpt --config " + (dir / "model.yaml").string() + " --out " + (dir / "run").string() +
                     " --steps 1 --batch-size 2 --threads 1";
  const auto first = run(train + " --images " + (dir / "images").string());
  ASSERT_EQ(first.exit_code, 0) << first.text;
  const auto again = run(train);
  EXPECT_EQ(again.exit_code, 2) << again.text;
  EXPECT_EQ(test::count_lines(again.text), 1) << again.text;
  EXPECT_NE(again.text.find((dir / "run" / "tokens.safetensors").string() + ": tokens of images " +
                            (dir / "images").string()),
            std::string::npos)
      << again.text;
  EXPECT_NE(again.text.find(", not of Fashion-MNIST, 32 px, VQ "), std::string::npos) << again.text;
}

// Weights that do not fit the config are found while the job is checked, before the output directory or its
// journal exist: the rerun with the right file is then not refused as another job.
TEST_F(JobErrors, WeightsThatDoNotFitAreRejectedBeforeAnythingIsWritten) {
  const std::string src = std::string(VISPEC_SOURCE_DIR) + "/configs/";
  std::string config = embedded_model();  // absolute weight paths
  const auto gpt = config.find(src + "fmnist/gpt.safetensors");
  config.replace(gpt, (src + "fmnist/gpt.safetensors").size(), src + "fmnist/draft_gpt.safetensors");
  write("model.yaml", config);
  const auto err = expect_rejected("model: model.yaml\nprompts: prompts.txt\nout: " + (dir / "out").string() +
                                   "\ndecoder: {name: ar}\n");
  EXPECT_NE(err.find("draft_gpt.safetensors: tensor '"), std::string::npos) << err;
  EXPECT_NE(err.find("has shape"), std::string::npos) << err;
}

// On a node whose GPUs vispec cannot use (a driver too old for the CUDA 13 build, injected here), device auto
// stops in one line naming why and how to ask for the CPU, before anything is written, where it decoded on the
// CPU after a warning; device: cpu decodes there.
TEST_F(JobErrors, UnusableGpusStopDeviceAutoInOneLine) {
  ::setenv("VISPEC_FAULT", "driver-too-old@0", 1);
  const auto err = expect_rejected(job("decoder: {name: ar}\nimages_per_prompt: 1\n"));
  write("job.yaml", job("decoder: {name: ar}\nimages_per_prompt: 1\ndevice: cpu\n"));
  const auto cpu = run("run " + (dir / "job.yaml").string());
  ::unsetenv("VISPEC_FAULT");
  EXPECT_NE(err.find("device auto: this node's NVIDIA GPUs cannot be used: the NVIDIA driver supports CUDA 12.4, "
                     "this build needs 13.0"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("; set device: cpu to decode on the CPU"), std::string::npos) << err;
  EXPECT_EQ(cpu.exit_code, 0) << cpu.text;
}

// srun with an MPI that got no PMI from it: every task a world of one, each running the job as rank 0 (they
// met at OUT's lock: "in use by another vispec run"). Named in one line, before anything is written.
TEST_F(JobErrors, SrunTasksThatAreNotOneMpiWorldAreNamed) {
  ::setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  const auto err = expect_rejected(job("decoder: {name: ar}\n"));
  ::unsetenv("SLURM_STEP_NUM_TASKS");
  EXPECT_NE(err.find("srun started 4 tasks (SLURM_STEP_NUM_TASKS) but this process is in an MPI world of 1: "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("srun --mpi=pmix"), std::string::npos) << err;
}

TEST_F(JobErrors, AnUnusableDeviceIsRejectedBeforeAnythingIsWritten) {
  auto err = expect_rejected(job("decoder: {name: ar}\ndevice: tpu\n"));
  EXPECT_NE(err.find("device: unknown device 'tpu'"), std::string::npos) << err;
  err = expect_rejected(job("decoder: {name: ar}\ndevice: cuda:99\n"));  // no machine has 100 GPUs
  EXPECT_NE(err.find("device: 'cuda:99'"), std::string::npos) << err;
  err = expect_rejected(job("decoder: {name: ar}\ncuda_graphs: always\n"));
  EXPECT_NE(err.find("job.yaml:5: cuda_graphs: expected 'auto' or 'off', got 'always'"), std::string::npos) << err;
}

// Text inputs in the encodings and shapes people make by accident: a UTF-8 or UTF-16 byte-order mark and CRLF
// line ends read like plain UTF-8 (yaml-cpp decodes by the BOM); an empty file, a file that is a list, and
// malformed --set overrides are refused in one line naming the file or the override.
TEST_F(JobErrors, EncodingsAndMalformedOverrides) {
  const std::string text = job("decoder: {name: ar, temperature: 0}\nimages_per_prompt: 1\n");
  std::string crlf, utf16 = "\xFF\xFE";
  for (const char c : text) {
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    utf16 += std::string(1, c) + '\0';
  }
  write("bom.yaml", "\xEF\xBB\xBF" + text);
  write("crlf.yaml", crlf);
  write("utf16.yaml", utf16);
  for (const char* file : {"bom.yaml", "crlf.yaml", "utf16.yaml"}) {
    const auto r = run("run " + (dir / file).string() + " --new");
    EXPECT_EQ(r.exit_code, 0) << file << ": " << r.text;
  }
  fs::remove_all(dir / "out");
  auto err = expect_rejected("");
  EXPECT_NE(err.find("job.yaml: a job file must be a YAML map"), std::string::npos) << err;
  err = expect_rejected("- model\n- prompts\n");
  EXPECT_NE(err.find("job.yaml: a job file must be a YAML map"), std::string::npos) << err;
  for (const char* bad :
       {"", "=1", "seed", "decoder.name.x=1", "seed={a: [1", "decoder={[a]: 1}", "a..b=1", "seed=1e999"}) {
    err = expect_override_rejected(bad);
    EXPECT_NE(err.find("--set"), std::string::npos) << bad << ": " << err;
  }
}

// Found by fuzz/fuzz_model_config: YAML allows a list or a map as a key, which yaml-cpp cannot convert to a
// field name; that escaped as an exception of yaml-cpp's (an "internal error", exit 3).
TEST_F(JobErrors, AKeyThatIsAListOrAMapIsRefusedInOneLine) {
  auto err = expect_rejected(job("decoder: {name: ar}\n? [a, b]\n: 1\n"));
  EXPECT_NE(err.find("a key that is a list or a map"), std::string::npos) << err;
  std::string config = read_file(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  config.replace(config.find("  vocab_size:"), 0, "  ? {x: 1}\n  : 2\n");
  write("model.yaml", config);
  err = expect_rejected("model: model.yaml\nprompts: prompts.txt\nout: " + (dir / "out").string() +
                        "\ndecoder: {name: ar}\n");
  EXPECT_NE(err.find("model.yaml:"), std::string::npos) << err;
  EXPECT_NE(err.find("a key that is a list or a map"), std::string::npos) << err;
}

// A prompt file saved with a UTF-8 byte-order mark keeps its first prompt whole (the mark is no part of it), and a
// reader started at a later prompt's offset reads on from there.
TEST(Prompts, AByteOrderMarkIsNoPartOfTheFirstPrompt) {
  const auto path = fs::temp_directory_path() / ("vispec_bom_" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream f(path, std::ios::binary);
    f << "\xEF\xBB\xBFt-shirt/top\n# a comment\nankle boot\n";
  }
  const auto prompts = read_prompts(path.string());
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0].text, "t-shirt/top");
  EXPECT_EQ(prompts[0].line, 1);
  EXPECT_EQ(prompts[1].text, "ankle boot");
  PromptReader later(path.string(), prompts[1].offset, prompts[1].line);
  Prompt p;
  ASSERT_TRUE(later.next(p));
  EXPECT_EQ(p.text, "ankle boot");
  fs::remove(path);
}

TEST(Prompts, ALongPromptIsQuotedByItsFirstBytesAndItsLength) {
  EXPECT_EQ(quoted_prompt("ankle boot"), "ankle boot");
  const std::string line(20 << 20, 'x');
  const auto q = quoted_prompt(line);
  EXPECT_EQ(q, std::string(kQuotedBytes, 'x') + "... (20971520 bytes)");
  // Cut at a character's start: a 3-byte character across the limit is left out whole.
  const auto accents = std::string(kQuotedBytes - 1, 'a') + "\xE2\x9C\x93" + "tail";
  EXPECT_EQ(quoted_prompt(accents).substr(0, kQuotedBytes), std::string(kQuotedBytes - 1, 'a') + ".");
  EXPECT_EQ(invalid_utf8_at(quoted_prompt(accents)), std::string::npos);
}

TEST(Prompts, InvalidUtf8IsFoundAtItsFirstByte) {
  EXPECT_EQ(invalid_utf8_at("ankle boot, h\xC3\xA9, \xE2\x9C\x93, \xF0\x9D\x84\x9E"), std::string::npos);
  EXPECT_EQ(invalid_utf8_at("ba\xFFg"), 2u);
  EXPECT_EQ(invalid_utf8_at("a\xC0\xAF"), 1u);          // overlong '/'
  EXPECT_EQ(invalid_utf8_at("\xED\xA0\x80"), 0u);       // a surrogate
  EXPECT_EQ(invalid_utf8_at("x\xF4\x90\x80\x80"), 1u);  // above U+10FFFF
  EXPECT_EQ(invalid_utf8_at("ok \xE2\x82"), 3u);        // cut short
  EXPECT_EQ(invalid_utf8_at("\xE2\x28\xA1"), 0u);       // a bad continuation byte
}

}  // namespace vispec

namespace vispec {
// A bad command line is bad input: one line with the prefix and exit 2, whatever CLI11 calls the error; help
// still exits 0.
TEST(CommandLine, ErrorsAreOneLineAndExitTwo) {
  for (const std::string args :
       {"", "run", "frobnicate", "train vq --config x.yaml --out /tmp/x --eval-images 0", "step-cost --batches many"}) {
    const auto r = test::run_vispec(args);
    EXPECT_EQ(r.exit_code, 2) << "vispec " << args << ": " << r.text;
    EXPECT_EQ(r.text.rfind("vispec: error: ", 0), 0u) << "vispec " << args << ": " << r.text;
    EXPECT_EQ(test::count_lines(r.text), 1) << "vispec " << args << ": " << r.text;
  }
  EXPECT_EQ(test::run_vispec("--help").exit_code, 0);
  EXPECT_EQ(test::run_vispec("train vq --help").exit_code, 0);
}
}  // namespace vispec
