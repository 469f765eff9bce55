// vispec bench: bad bench files are refused with one line before any work; a small real bench on the
// embedded model writes its JSON, markdown and plot with self-consistent figures.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "io/atomic_file.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
class Bench : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("vispec_bench_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "prompts.txt") << "trouser\nbag\n";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string bench(const std::string& decoders, const std::string& prompts = "prompts.txt") {
    const std::string text = "name: t\nmodel: " + std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml\n" +
                             "prompts: " + prompts + "\nimages_per_prompt: 3\nbatch_size: 4\nthreads: 1\n" +
                             "decoders:\n" + decoders;
    std::ofstream(dir / "bench.yaml") << text;
    return "bench " + (dir / "bench.yaml").string() + " --results " + (dir / "results").string();
  }
  std::string expect_refused(const std::string& args) {
    const auto r = test::run_vispec(args);
    EXPECT_EQ(r.exit_code, 2) << r.text;
    EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
    EXPECT_FALSE(fs::exists(dir / "results")) << "results written for a refused bench";
    return r.text;
  }
  fs::path dir;
};

TEST_F(Bench, RefusesAnUnknownDecoder) {
  const auto err = expect_refused(bench("  - decoder: {name: ar}\n  - decoder: {name: warp_drive}\n"));
  EXPECT_NE(err.find("bench.yaml:9: decoders[1].decoder.name: unknown decoder 'warp_drive'"), std::string::npos) << err;
}

TEST_F(Bench, RefusesAnEmptyPromptSet) {
  std::ofstream(dir / "empty.txt") << "# nothing but a comment\n\n";
  const auto err = expect_refused(bench("  - decoder: {name: ar}\n", "empty.txt"));
  EXPECT_NE(err.find("empty.txt: the prompts file holds no prompts"), std::string::npos) << err;
}

TEST_F(Bench, RefusesDuplicateLabelsAndAnUnknownBaseline) {
  auto err = expect_refused(bench("  - decoder: {name: ar}\n  - decoder: {name: ar, top_k: 5}\n"));
  EXPECT_NE(err.find("label 'ar' is used twice"), std::string::npos) << err;
  err = expect_refused(bench("  - decoder: {name: ar}\n") + " --set baseline=nope");
  EXPECT_NE(err.find("baseline: 'nope' is not the label of a decoder"), std::string::npos) << err;
}

TEST_F(Bench, SmallBenchWritesConsistentResults) {
  const auto r =
      test::run_vispec(bench("  - decoder: {name: ar, cfg_scale: 2.0}\n"
                             "  - label: greedy\n    decoder: {name: ar, cfg_scale: 2.0, temperature: 0}\n"));
  ASSERT_EQ(r.exit_code, 0) << r.text;
  const auto json = nlohmann::json::parse(read_file((dir / "results/t.json").string()));
  ASSERT_EQ(json["decoders"].size(), 2u);
  EXPECT_EQ(json["baseline"], "ar");
  EXPECT_EQ(json["images_per_decoder"], 6);
  for (const auto& d : json["decoders"]) {
    EXPECT_EQ(d["images"], 6);
    EXPECT_DOUBLE_EQ(d["target_forwards_per_image"].get<double>(), 256.0) << "AR: one target pass per token";
    EXPECT_DOUBLE_EQ(d["mean_accepted_length"].get<double>(), 1.0);
    EXPECT_GT(d["ms_per_image"].get<double>(), 0.0);
    EXPECT_GE(d["class_agreement"].get<double>(), 0.0);
    EXPECT_LE(d["class_agreement"].get<double>(), 1.0);
    EXPECT_GT(d["fid"].get<double>(), 0.0);
    // AR issues at least one op per model layer per token, and reads the host a few times per batch.
    EXPECT_GT(d["aten_ops_per_image"].get<double>(), 256.0);
    EXPECT_LT(d["host_reads_per_image"].get<double>(), 10.0);
  }
  EXPECT_DOUBLE_EQ(json["decoders"][0]["speedup"].get<double>(), 1.0) << "the baseline against itself";
  const std::string md = read_file((dir / "results/t.md").string());
  EXPECT_NE(md.find("| greedy | 256.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| ATen ops / image | host reads / image |"), std::string::npos) << md;
  if (std::system("command -v gnuplot > /dev/null") == 0)
    EXPECT_GT(fs::file_size(dir / "results/t.png"), 1000u) << "plot missing although gnuplot is installed";
  EXPECT_FALSE(fs::exists(dir / "results/t-accepted.png")) << "AR alone has no accepted lengths to draw";
  for (const auto& f : fs::directory_iterator(dir / "results"))
    EXPECT_EQ(f.path().string().find(".tmp"), std::string::npos) << "temporary left: " << f.path();
}

// vispec bench-plot redraws a recorded bench's pictures: 14 variants of 3 decoders (more than the palette's 12
// colours: one per decoder), speculative ones, so the accepted-length chart too; a file that is not a bench's
// results is one line and exit 2.
TEST_F(Bench, BenchPlotRedrawsARecordedBench) {
  nlohmann::json r = {{"name", "p"}, {"images_per_decoder", 10}, {"device", "cpu"}, {"baseline", "ar"}};
  for (int i = 0; i < 14; ++i)
    r["decoders"].push_back({{"label", i == 0 ? std::string("ar") : "v" + std::to_string(i)},
                             {"decoder", i == 0  ? "ar"
                                         : i < 8 ? "sd"
                                                 : "eagle2"},
                             {"speedup", 0.1 * (i + 1)},
                             {"fid", 10.0 + i},
                             {"class_agreement", 0.9 - 0.01 * i},
                             {"mean_accepted_length", 1.0 + 0.3 * i}});
  write_file_atomic((dir / "p.json").string(), r.dump());
  const auto done = test::run_vispec("bench-plot " + (dir / "p.json").string());
  ASSERT_EQ(done.exit_code, 0) << done.text;
  if (std::system("command -v gnuplot > /dev/null") == 0) {
    EXPECT_GT(fs::file_size(dir / "p.png"), 1000u);
    EXPECT_GT(fs::file_size(dir / "p-accepted.png"), 1000u);
  }
  for (const auto& f : fs::directory_iterator(dir))
    EXPECT_EQ(f.path().string().find(".tmp"), std::string::npos) << "temporary left: " << f.path();
  write_file_atomic((dir / "q.json").string(), R"({"name": "q"})");
  const auto refused = test::run_vispec("bench-plot " + (dir / "q.json").string());
  EXPECT_EQ(refused.exit_code, 2) << refused.text;
  EXPECT_NE(refused.text.find("q.json: not a bench's results"), std::string::npos) << refused.text;
}

}  // namespace
}  // namespace vispec
