// The output directory belongs to the user: vispec removes what its runs wrote there and nothing else (the
// names of io/run_layout.h), and `run --new` is one step as far as any later run or `verify` can tell
// (scheduler/start_over.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli.h"
#include "temp_dir_test.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
class RunDirectory : public test::TempDirTest {
 protected:
  RunDirectory() : TempDirTest("rundir") {}
  void SetUp() override {
    TempDirTest::SetUp();
    out = dir / "out";
    write(dir / "prompts.txt", "trouser\nbag\n");
    write(dir / "one.txt", "trouser\n");
    write(dir / "job.yaml", "model: " + std::string(VISPEC_SOURCE_DIR) +
                                "/configs/fmnist.yaml\nprompts: prompts.txt\n"
                                "out: " +
                                out.string() +
                                "\ndecoder: {name: ar, temperature: 0}\nimages_per_prompt: 1\n"
                                "unit_size: 1\nthreads: 1\n");
  }
  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  test::CliOutcome run(const std::string& args) {
    return test::run_vispec("run " + (dir / "job.yaml").string() + " " + args);
  }
  fs::path out;
};

TEST_F(RunDirectory, NewRefusesADirectoryThatHoldsNoVispecJournal) {
  fs::create_directories(out / "images");
  write(out / "images" / "holiday.png", "mine");
  write(out / "notes.txt", "mine");
  const auto r = run("--new");
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("holds no vispec journal"), std::string::npos) << r.text;
  EXPECT_TRUE(fs::exists(out / "images" / "holiday.png"));
  EXPECT_TRUE(fs::exists(out / "notes.txt"));
  EXPECT_FALSE(fs::exists(out / "journal.jsonl"));
}

TEST_F(RunDirectory, RerunsAndNewRemoveOnlyWhatARunWrote) {
  ASSERT_EQ(run("").exit_code, 0);
  ASSERT_TRUE(fs::exists(out / "images" / "00000001.png"));
  // Files of the user's own in the run's directories, some named like a run's leftovers but not of its names.
  const fs::path mine[] = {out / "README.txt",
                           out / "notes.tmp.1",
                           out / "images" / "mine.jpg",
                           out / "images" / "holiday.png.tmp.draft",
                           out / "images" / "0001.png",
                           out / "metrics" / "unit-notes.txt",
                           out / "metrics" / "unit-000001.jsonl.bak"};
  for (const auto& p : mine) write(p, "mine");
  write(out / "images" / "00000001.png.tmp.4242", "a killed run's temporary");
  auto r = run("");
  EXPECT_EQ(r.exit_code, 0) << r.text;
  EXPECT_FALSE(fs::exists(out / "images" / "00000001.png.tmp.4242")) << "a run's temporary stays behind";
  r = run("--new --set seed=5 --set prompts=" + (dir / "one.txt").string());
  EXPECT_EQ(r.exit_code, 0) << r.text;
  EXPECT_NE(r.text.find("(0 done before"), std::string::npos) << r.text;
  EXPECT_TRUE(fs::exists(out / "images" / "00000000.png"));
  EXPECT_FALSE(fs::exists(out / "images" / "00000001.png")) << "the previous run's image stays beside the new job's";
  for (const auto& p : mine) EXPECT_TRUE(fs::exists(p)) << p << ": removed, though vispec did not write it";
  EXPECT_FALSE(fs::exists(out / ".vispec-new"));
}

TEST_F(RunDirectory, ANewKilledHalfwayIsFinishedByTheNextRunAndVerifySaysSo) {
  ASSERT_EQ(run("").exit_code, 0);
  // What a --new killed after its first removal leaves: the mark, no journal, the old run's images.
  write(out / ".vispec-new", "");
  fs::remove(out / "journal.jsonl");
  auto v = test::run_vispec("verify " + out.string());
  EXPECT_EQ(v.exit_code, 2) << v.text;
  EXPECT_NE(v.text.find("--new` was interrupted"), std::string::npos) << v.text;
  // Another job: the old one is being removed, so the journal's fingerprint does not refuse it.
  const auto r = run("--set seed=5 --set prompts=" + (dir / "one.txt").string());
  EXPECT_EQ(r.exit_code, 0) << r.text;
  EXPECT_NE(r.text.find("finishing the --new a killed run began"), std::string::npos) << r.text;
  EXPECT_FALSE(fs::exists(out / "images" / "00000001.png")) << "the old run's image outlived the --new";
  EXPECT_FALSE(fs::exists(out / ".vispec-new"));
  v = test::run_vispec("verify " + out.string(), /*keep_stdout=*/true);
  EXPECT_EQ(v.exit_code, 0) << v.text;
}

}  // namespace
}  // namespace vispec
