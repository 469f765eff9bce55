// Planning streams the prompt list and keeps one start per unit, not one record per sample; each unit's
// samples read back from its start equal a plain expansion of the whole list. And the job fingerprint covers
// every byte of the weight files.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "io/atomic_file.h"
#include "io/file_digest.h"
#include "io/prompts.h"
#include "models/model_config.h"
#include "workers/job_plan.h"

namespace vispec {

namespace fs = std::filesystem;

class SamplePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("vispec_plan_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
  fs::path dir;
  ModelConfig model;
};

namespace {
// The plain expansion: every prompt line (as the reader sees it), images_per_prompt samples each.
std::vector<PlannedSample> expand(const ModelConfig& model, const std::string& file, int64_t ipp) {
  std::vector<PlannedSample> all;
  const auto prompts = read_prompts(file);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int64_t id = invalid_utf8_at(prompts[i].text) == std::string::npos ? model.class_id(prompts[i].text) : -1;
    if (id < 0) continue;
    for (int64_t j = 0; j < ipp; ++j) all.push_back({uint64_t(i) * uint64_t(ipp) + uint64_t(j), id, prompts[i].text});
  }
  return all;
}
}  // namespace

TEST_F(SamplePlanTest, EachUnitReadFromItsStartEqualsThePlainExpansion) {
  // Comments, blank lines, CRLF endings, a bad class, invalid UTF-8, a numeric class, no final newline.
  const std::string text = "# header\r\ntrouser\r\n\r\n  bag \nsock\n\n# c\nsandal\nba\xFFg\n3\ncoat";
  const auto file = write("prompts.txt", text);
  for (const int64_t ipp : {1, 3, 5})
    for (const int64_t U : {1, 2, 4, 7, 100}) {
      const auto plan = plan_samples(model, file, ipp, U);
      const auto all = expand(model, file, ipp);
      EXPECT_EQ(plan.id_count, uint64_t(7 * ipp));
      EXPECT_EQ(plan.samples, int64_t(all.size()));
      EXPECT_EQ(plan.units.size(), size_t((plan.id_count + uint64_t(U) - 1) / uint64_t(U)));
      EXPECT_EQ(plan.prompts_fnv, fnv1a(text.data(), text.size()));
      ASSERT_EQ(plan.errors.size(), 2u);
      EXPECT_EQ(plan.errors[0].line, 5);  // sock
      EXPECT_EQ(plan.errors[1].line, 9);  // invalid UTF-8
      std::vector<PlannedSample> joined;
      for (size_t u = 0; u < plan.units.size(); ++u) {
        const uint64_t first = u * uint64_t(U), end = std::min(first + uint64_t(U), plan.id_count);
        for (auto& s : read_samples(model, file, file, ipp, plan.units[u], first, end)) {
          EXPECT_TRUE(s.sample_id >= first && s.sample_id < end) << s.sample_id;
          joined.push_back(std::move(s));
        }
      }
      ASSERT_EQ(joined.size(), all.size()) << "ipp " << ipp << " U " << U;
      for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(joined[i].sample_id, all[i].sample_id);
        EXPECT_EQ(joined[i].class_id, all[i].class_id);
        EXPECT_EQ(joined[i].prompt, all[i].prompt);
      }
    }
}

// 10^8 sample ids (200,000 prompts x 500 images): the plan holds 10^4 unit starts, whatever the sample count.
TEST_F(SamplePlanTest, AHundredMillionSamplesArePlannedPerUnit) {
  std::string text;
  for (int i = 0; i < 200000; ++i) text += (i == 123456 ? "sock\n" : "bag\n");
  const auto file = write("big.txt", text);
  const auto plan = plan_samples(model, file, 500, 10000);
  EXPECT_EQ(plan.id_count, 100000000u);
  EXPECT_EQ(plan.samples, 100000000 - 500);
  ASSERT_EQ(plan.units.size(), 10000u);
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].line, 123457);
  // Unit 6172 holds ids 61,720,000 .. 61,729,999: prompts 123,440 .. 123,459, one of them the bad line.
  const auto& start = plan.units[6172];
  EXPECT_EQ(start.prompt, 123440u);
  EXPECT_EQ(start.line, 123441);
  EXPECT_EQ(start.offset, 123440u * 4);
  const auto samples = read_samples(model, file, file, 500, start, 61720000, 61730000);
  EXPECT_EQ(samples.size(), 9500u);
  EXPECT_EQ(samples.front().sample_id, 61720000u);
  EXPECT_EQ(samples.back().sample_id, 61729999u);
}

// A unit's prompts are the planned ones or an error naming the file: a line edited, removed or added after
// planning (in the prompt file, or in the run's copy of it that the workers read) is never decoded in silence.
TEST_F(SamplePlanTest, AUnitWhosePromptsChangedAfterPlanningIsAnError) {
  const std::string text = "trouser\n# a comment\nbag\nsock\ncoat\nshirt\n";
  const auto file = write("prompts.txt", text);
  const auto plan = plan_samples(model, file, 2, 3);  // units of 3 ids over 5 prompts of 2 images
  ASSERT_EQ(plan.units.size(), 4u);
  auto read_unit = [&](const std::string& source, size_t u) {
    const uint64_t first = u * 3, end = std::min<uint64_t>(first + 3, plan.id_count);
    return read_samples(model, source, file, 2, plan.units[u], first, end);
  };
  for (size_t u = 0; u < plan.units.size(); ++u) EXPECT_NO_THROW(read_unit(file, u)) << u;
  auto expect_refused = [&](const std::string& edited, size_t u, const char* what) {
    const auto source = write("edited.txt", edited);
    try {
      read_unit(source, u);
      ADD_FAILURE() << what << ": unit " << u << " was read";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(source + ": the prompts of sample ids"), std::string::npos) << e.what();
    }
  };
  expect_refused("trouser\n# a comment\nbag\nsock\ncoat\nskirt\n", 3, "a class renamed, same length");
  expect_refused("trouser\n# a comment\nbag\ncoat\nshirt\n", 2, "a line removed");
  expect_refused("trouser\n# a comment\nbag\nsock\ncoat\n", 3, "the last line gone");
  expect_refused("trouser\n# a comment\nbag\nsock\nbag\nshirt\n", 2, "a class changed");
  // A comment may change (the same length: the units' offsets are the planned ones): it is not a prompt.
  EXPECT_NO_THROW(read_unit(write("comment.txt", "trouser\n# a remark!\nbag\nsock\ncoat\nshirt\n"), 3));
}

// The run reads its own copy of the prompt file, taken when it starts, so an edit of the file meanwhile
// changes nothing; a copy that is not the planned bytes (tampered with between a kill and the resume) is
// taken again, and the resumed run makes the images an uninterrupted one made.
TEST_F(SamplePlanTest, RunsReadTheirOwnCopyOfThePlannedPrompts) {
  write("prompts.txt", "bag\ntrouser\ncoat\nsandal\n");
  write("job.yaml", "model: " + std::string(VISPEC_SOURCE_DIR) +
                        "/configs/fmnist.yaml\nprompts: prompts.txt\n"
                        "decoder: {name: ar, temperature: 0}\nunit_size: 1\nout: " +
                        (dir / "out").string() + "\n");
  const std::string job = (dir / "job.yaml").string();
  auto r = test::run_vispec("run " + job + " --set threads=1");
  ASSERT_EQ(r.exit_code, 0) << r.text;
  EXPECT_EQ(read_file((dir / "out" / "planned-prompts.txt").string()), "bag\ntrouser\ncoat\nsandal\n");
  const auto uninterrupted = read_file((dir / "out" / "images" / "00000002.png").string());
  ::setenv("VISPEC_FAULT", "kill-at-unit@2", 1);
  r = test::run_vispec("run " + job + " --new --set threads=1");
  ::unsetenv("VISPEC_FAULT");
  ASSERT_NE(r.exit_code, 0) << r.text;
  ASSERT_FALSE(fs::exists(dir / "out" / "images" / "00000002.png"));
  write("out/planned-prompts.txt", "bag\ntrouser\nshirt\nsandal\n");  // same length, another class
  r = test::run_vispec("run " + job + " --set threads=1");
  EXPECT_EQ(r.exit_code, 0) << r.text;
  EXPECT_NE(r.text.find("planned-prompts.txt is not the planned prompts: copied again"), std::string::npos) << r.text;
  EXPECT_EQ(read_file((dir / "out" / "planned-prompts.txt").string()), "bag\ntrouser\ncoat\nsandal\n");
  EXPECT_EQ(read_file((dir / "out" / "images" / "00000002.png").string()), uninterrupted);
}

// A named pipe as the prompt file would block the run at its open, forever: it is refused in one line.
TEST_F(SamplePlanTest, ANamedPipeIsNotAPromptFile) {
  ASSERT_EQ(::mkfifo((dir / "pipe.txt").c_str(), 0600), 0);
  write("job.yaml", "model: " + std::string(VISPEC_SOURCE_DIR) +
                        "/configs/fmnist.yaml\nprompts: pipe.txt\n"
                        "decoder: {name: ar}\nout: " +
                        (dir / "out").string() + "\n");
  const auto r = test::run_vispec("run " + (dir / "job.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("pipe.txt: the prompts file is a named pipe"), std::string::npos) << r.text;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// A byte changed in the middle of a weight file, far from its first and last MiB, changes the job's identity:
// the rerun is refused, naming the weights.
TEST_F(SamplePlanTest, AChangeInTheMiddleOfAWeightFileIsAnotherJob) {
  const std::string src = std::string(VISPEC_SOURCE_DIR) + "/configs/";
  std::string config = read_file(src + "fmnist.yaml");
  fs::copy_file(src + "fmnist/vq.safetensors", dir / "vq.safetensors");
  for (size_t at = config.find(" fmnist/"); at != std::string::npos; at = config.find(" fmnist/", at + 1))
    config.replace(at + 1, 0, src);
  const auto vq = config.find(src + "fmnist/vq.safetensors");
  config.replace(vq, (src + "fmnist/vq.safetensors").size(), (dir / "vq.safetensors").string());
  write("model.yaml", config);
  write("prompts.txt", "bag\n");
  write("job.yaml", "model: model.yaml\nprompts: prompts.txt\ndecoder: {name: ar, temperature: 0}\nout: " +
                        (dir / "out").string() + "\n");
  ::setenv("VISPEC_CACHE_DIR", (dir / "cache").c_str(), 1);
  auto r = test::run_vispec("run " + (dir / "job.yaml").string());
  ASSERT_EQ(r.exit_code, 0) << r.text;
  EXPECT_TRUE(fs::exists(dir / "cache" / "file-digests.jsonl"));  // remembered for the next start

  const auto size = fs::file_size(dir / "vq.safetensors");
  ASSERT_GT(size, 2u << 20) << "the VQ weights are too small for this test";  // the middle is off both ends' MiB
  {
    std::fstream f(dir / "vq.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(size / 2));
    char c = 0;
    f.read(&c, 1);
    c = char(c ^ 0x01);  // the lowest mantissa bit of some weight
    f.seekp(std::streamoff(size / 2));
    f.write(&c, 1);
  }
  r = test::run_vispec("run " + (dir / "job.yaml").string());
  ::unsetenv("VISPEC_CACHE_DIR");
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_NE(r.text.find("weights.vq.crc32 was"), std::string::npos) << r.text;
}

}  // namespace vispec
