// Bad job input: `vispec run` exits non-zero with ONE line naming file, line and field, and writes nothing
// (except a bad prompt line, which is recorded while the job goes on).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "io/atomic_file.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
test::CliOutcome run(const std::string& args) { return test::run_vispec(args); }

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
  // Runs the job and checks the common contract: exit code 2, one line, nothing written.
  std::string expect_rejected(const std::string& job_text) {
    write("job.yaml", job_text);
    const auto r = run("run " + (dir / "job.yaml").string());
    EXPECT_EQ(r.exit_code, 2) << r.text;
    EXPECT_EQ(std::count(r.text.begin(), r.text.end(), '\n'), 1) << r.text;
    EXPECT_FALSE(fs::exists(dir / "out")) << "output written for a bad job";
    return r.text;
  }
  fs::path dir;
};
}  // namespace

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

TEST_F(JobErrors, UnreadablePromptsFile) {
  auto text = job("decoder: {name: ar}\n");
  text.replace(text.find("prompts.txt"), 11, "nowhere.txt");
  const auto err = expect_rejected(text);
  EXPECT_NE(err.find("nowhere.txt: cannot read prompts file"), std::string::npos) << err;
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

TEST_F(JobErrors, UnwritableOutputDirectory) {
  write("job.yaml", job("decoder: {name: ar}\n"));
  const auto r = run("run " + (dir / "job.yaml").string() + " --out /dev/null/out");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("/dev/null/out/images: cannot create directory"), std::string::npos) << r.text;
}

TEST_F(JobErrors, UnknownTopLevelFieldAndBadSetOverride) {
  auto err = expect_rejected(job("decoder: {name: ar}\nimages_per_promt: 3\n"));
  EXPECT_NE(err.find("job.yaml:5: images_per_promt: unknown field"), std::string::npos) << err;
  write("job.yaml", job("decoder: {name: ar}\n"));
  const auto r = run("run " + (dir / "job.yaml").string() + " --set decoder.temperature=-1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("--set decoder.temperature: must be >= 0"), std::string::npos) << r.text;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace vispec
