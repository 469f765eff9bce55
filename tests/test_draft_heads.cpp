// Draft-head training from distillation data (issue 5): the batch stream's guarantees, a few training steps
// lowering every head's held-out loss through the real `vispec train` commands, and one clear line for a
// dataset or head that does not fit the target.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli.h"
#include "core/check.h"
#include "distill_job.h"
#include "io/atomic_file.h"
#include "io/distill_reader.h"
#include "io/h5.h"
#include "models/drafters/eagle_drafter.h"
#include "models/drafters/ssd_heads.h"
#include "train/distill_batches.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
const std::string kTargetConfig = std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml";
}  // namespace

// The fixture has external linkage: the unity build includes this file in a larger one.
class DraftHeads : public ::testing::Test {
 protected:
  void SetUp() override { dir = test::test_directory("vispec_heads_"); }
  void TearDown() override { fs::remove_all(dir); }

  // 12 samples in 3 units of 4 (the last unit is held out).
  std::string dataset(const std::string& streams = "cond+uncond") {
    return test::run_distill_job(dir, "bf16", 6, 4, streams);
  }
  test::CliOutcome train(const std::string& kind, const std::string& data, const std::string& out,
                         const std::string& extra = "", int steps = 30) {
    return test::run_vispec("train " + kind + " --config " + kTargetConfig + " --data " + data + " --out " + out +
                            " --steps " + std::to_string(steps) +
                            " --batch-size 4 --lr 3e-3 --warmup 3 --log-every 10 --checkpoint-every 30"
                            " --threads 1 " +
                            extra);
  }
  fs::path dir;
};

namespace {
std::vector<nlohmann::json> read_log(const std::string& run_dir) {
  std::ifstream in(run_dir + "/log.jsonl");
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  return records;
}

// The held-out evaluations (records without "loss") at the first and the last step.
std::pair<nlohmann::json, nlohmann::json> first_and_last_eval(const std::string& run_dir) {
  std::vector<nlohmann::json> evals;
  for (auto& r : read_log(run_dir))
    if (!r.contains("loss")) evals.push_back(r);
  EXPECT_GE(evals.size(), 2u);
  return {evals.front(), evals.back()};
}

std::string token_key(const torch::Tensor& row) {
  std::ostringstream s;
  for (int64_t i = 0; i < row.size(0); ++i) s << row[i].item<int64_t>() << ',';
  return s.str();
}
}  // namespace

TEST_F(DraftHeads, BatchesAreAFunctionOfSeedAndStepAndCoverEachTrainingRowOncePerEpoch) {
  const auto out = dataset();
  auto reader = std::make_shared<DistillReader>(distill_index_path(out));
  const auto split = split_units(*reader, 1);
  ASSERT_EQ(split.train.size(), 2u);
  ASSERT_EQ(split.heldout, std::vector<size_t>{2});
  // Windows of one unit (4 rows), batches of 2: an epoch is 4 steps over the 8 training rows.
  DistillBatches sequential(reader, split.train, 2, 4, 0.0, 7);
  std::multiset<std::string> seen;
  std::vector<HeadBatch> batches;
  for (int64_t step = 0; step < 8; ++step) batches.push_back(sequential.batch(step));
  for (int64_t step = 0; step < 4; ++step)
    for (int64_t r = 0; r < 2; ++r) seen.insert(token_key(batches[size_t(step)].tokens[r]));
  std::set<std::string> training_rows, heldout_rows;
  const auto all = reader->read(0, 12);
  for (int64_t r = 0; r < 12; ++r) {
    auto row =
        torch::from_blob(const_cast<int32_t*>(all.tokens.data()) + r * 256, {256}, torch::kInt32).to(torch::kInt64);
    (r < 8 ? training_rows : heldout_rows).insert(token_key(row));
  }
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), training_rows);
  EXPECT_EQ(seen.size(), 8u) << "a row repeated within an epoch";

  // A stream created at step 6 (a resumed run) gives what the uninterrupted one gave.
  DistillBatches resumed(reader, split.train, 2, 4, 0.0, 7);
  const auto b6 = resumed.batch(6);
  EXPECT_TRUE(b6.tokens.equal(batches[6].tokens));
  EXPECT_TRUE(b6.hidden.equal(batches[6].hidden));
  // Another seed shuffles differently; epoch 2 differs from epoch 1.
  DistillBatches other(reader, split.train, 2, 4, 0.0, 8);
  bool differs = false;
  for (int64_t step = 0; step < 4; ++step)
    differs = differs || !other.batch(step).tokens.equal(batches[size_t(step)].tokens);
  EXPECT_TRUE(differs);
  // null_fraction 1: the same rows, the uncond stream's states.
  DistillBatches null_rows(reader, split.train, 2, 4, 1.0, 7);
  const auto n0 = null_rows.batch(0);
  EXPECT_TRUE(n0.tokens.equal(batches[0].tokens));
  EXPECT_FALSE(n0.hidden.equal(batches[0].hidden));
}

// Data-parallel: rank r's batches are its rows of the whole batch (null streams included), and it reads only
// the rows its slots use, so the ranks together read each window's rows once.
TEST_F(DraftHeads, EachRankReadsAndGetsItsShareOfEveryBatch) {
  const auto out = dataset();
  auto reader = std::make_shared<DistillReader>(distill_index_path(out));
  const auto split = split_units(*reader, 1);
  // Windows of both training units (8 rows, shuffled across the units), batches of 4, 3 ranks (1, 1, 2 rows).
  DistillBatches whole(reader, split.train, 4, 8, 0.5, 7);
  std::vector<std::unique_ptr<DistillBatches>> ranks;
  for (int r = 0; r < 3; ++r) {
    const BatchShard shard{4 * r / 3, 4 * (r + 1) / 3 - 4 * r / 3, 4};
    ranks.push_back(std::make_unique<DistillBatches>(reader, split.train, 4, 8, 0.5, 7, shard));
  }
  for (int64_t step = 0; step < 6; ++step) {  // three windows (epochs) of two batches
    const auto all = whole.batch(step);
    std::vector<torch::Tensor> hidden, tokens;
    for (auto& rank : ranks) {
      const auto part = rank->batch(step);
      hidden.push_back(part.hidden);
      tokens.push_back(part.tokens);
    }
    EXPECT_TRUE(torch::cat(tokens).equal(all.tokens)) << "step " << step;
    EXPECT_TRUE(torch::cat(hidden).equal(all.hidden)) << "step " << step;
  }
  EXPECT_EQ(whole.rows_read(), 24);  // 3 windows of 8 rows
  EXPECT_EQ(ranks[0]->rows_read(), 6);
  EXPECT_EQ(ranks[1]->rows_read(), 6);
  EXPECT_EQ(ranks[2]->rows_read(), 12);
}

TEST_F(DraftHeads, EagleHeadTrainingLowersHeldOutLossAndExportsACheckedHead) {
  const auto out = dataset(), run = (dir / "eagle").string();
  const auto r = train("eagle-head", out, run);
  ASSERT_EQ(r.exit_code, 0) << r.text;
  const auto [before, after] = first_and_last_eval(run);
  std::cout << "eagle held-out before " << before.dump() << "\n       after " << after.dump() << "\n";
  EXPECT_EQ(before["step"], 0);
  EXPECT_EQ(after["step"], 30);
  EXPECT_LT(after["heldout_vloss"].get<double>(), before["heldout_vloss"].get<double>());
  EXPECT_LT(after["heldout_ploss"].get<double>(), before["heldout_ploss"].get<double>());
  for (const char* k : {"heldout_top1", "heldout_top3", "heldout_accept"}) {
    EXPECT_GE(after[k].get<double>(), 0.0);
    EXPECT_LE(after[k].get<double>(), 1.0);
  }
  EXPECT_LE(after["heldout_top1"].get<double>(), after["heldout_top3"].get<double>());
  const auto drafter = load_eagle_drafter(run + "/model.safetensors", load_model_config(kTargetConfig));
  EXPECT_EQ(drafter->fc->weight.sizes(), (std::vector<int64_t>{128, 256}));
}

// A checkpoint is one set: a trainer killed while writing one resumes from the one before and ends with the
// weights of an uninterrupted run; a resume with other options, a --steps before the checkpoint, or a damaged
// checkpoint file is one line (train/checkpoint.h).
TEST_F(DraftHeads, ACheckpointIsOneSetAndAResumeContinuesTheSameTraining) {
  const auto data = dataset();
  auto run = [&](const std::string& out, const std::string& extra, const std::string& lr = "3e-3") {
    return test::run_vispec("train eagle-head --config " + kTargetConfig + " --data " + data + " --out " + out +
                            " --batch-size 4 --lr " + lr +
                            " --warmup 2 --log-every 2 --checkpoint-every 2 --threads 1 " + extra);
  };
  const auto whole = (dir / "whole").string(), killed = (dir / "killed").string();
  auto r = run(whole, "--steps 6");
  ASSERT_EQ(r.exit_code, 0) << r.text;
  ::setenv("VISPEC_FAULT", "kill-in-checkpoint@4", 1);
  r = run(killed, "--steps 6");
  ::unsetenv("VISPEC_FAULT");
  ASSERT_NE(r.exit_code, 0) << r.text;
  EXPECT_TRUE(fs::exists(killed + "/checkpoints/step-00000002/state.json"));
  EXPECT_FALSE(fs::exists(killed + "/checkpoints/step-00000004"));
  r = run(killed, "--steps 6");
  ASSERT_EQ(r.exit_code, 0) << r.text;
  EXPECT_NE(r.text.find("at step 2"), std::string::npos) << r.text;
  EXPECT_EQ(read_file(killed + "/model.safetensors"), read_file(whole + "/model.safetensors"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(killed + "/checkpoints")) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"step-00000006"}) << "older checkpoints and temporaries stay";
  // What a resume refuses, each in one line.
  r = run(whole, "--steps 6", "1e-3");
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_NE(r.text.find("was trained with lr 0.003, not 0.001"), std::string::npos) << r.text;
  r = run(whole, "--steps 6 --resume-with-other-options", "1e-3");
  EXPECT_EQ(r.exit_code, 0) << r.text;
  r = run(whole, "--steps 4");
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_NE(r.text.find("its checkpoint is at step 6, past --steps 4"), std::string::npos) << r.text;
  const auto weights = whole + "/checkpoints/step-00000006/weights.safetensors";
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(fs::file_size(weights) - 3));
    f.put('\x7f');
  }
  r = run(whole, "--steps 8");
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_NE(r.text.find("weights.safetensors: "), std::string::npos) << r.text;
  EXPECT_NE(r.text.find(": damaged; remove "), std::string::npos) << r.text;
}

TEST_F(DraftHeads, SsdHeadTrainingLowersEveryHeadsHeldOutLoss) {
  const auto out = dataset(), run = (dir / "ssd").string();
  const auto r = train("ssd-heads", out, run, "--horizontal 3 --vertical 2");
  ASSERT_EQ(r.exit_code, 0) << r.text;
  const auto [before, after] = first_and_last_eval(run);
  for (const char* head : {"h+1", "h+2", "h+3", "v+1", "v+2"}) {
    const std::string loss = std::string(head) + "_loss";
    ASSERT_TRUE(before.contains(loss)) << before.dump();
    std::cout << head << " held-out loss " << before[loss] << " -> " << after[loss] << "\n";
    EXPECT_LT(after[loss].get<double>(), before[loss].get<double>()) << head;
  }
  EXPECT_FALSE(before.contains("h+4_loss"));
  const auto heads = load_ssd_heads(run + "/model.safetensors", load_model_config(kTargetConfig));
  EXPECT_EQ(heads->count(), 5);
  EXPECT_EQ(heads->raster_offset(3), 16);
  EXPECT_EQ(heads->raster_offset(4), 32);
}

TEST_F(DraftHeads, MismatchesBetweenDataHeadAndTargetGiveOneLine) {
  const auto out = dataset();
  // A target of another width: named before any weights are read.
  std::string text;
  {
    std::ifstream in(kTargetConfig);
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  auto replace = [&](const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
  };
  replace("dim: 128", "dim: 64");
  replace("weights: fmnist/gpt", std::string("weights: ") + VISPEC_SOURCE_DIR + "/configs/fmnist/gpt");
  replace("weights: fmnist/vq", std::string("weights: ") + VISPEC_SOURCE_DIR + "/configs/fmnist/vq");
  replace("weights: fmnist/classifier", std::string("weights: ") + VISPEC_SOURCE_DIR + "/configs/fmnist/classifier");
  std::ofstream((dir / "narrow.yaml").string()) << text;
  auto r = test::run_vispec("train eagle-head --config " + (dir / "narrow.yaml").string() + " --data " + out +
                            " --out " + (dir / "x").string() + " --steps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("index.h5: hidden_dim is 128 but"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("gpt.dim 64"), std::string::npos) << r.text;

  // An EAGLE head offered as the start of SSD heads.
  const auto eagle = (dir / "eagle").string();
  ASSERT_EQ(train("eagle-head", out, eagle, "", 1).exit_code, 0);
  r = train("ssd-heads", out, (dir / "ssd").string(), "--init " + eagle + "/model.safetensors");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("model.safetensors: a vispec 'eagle_head' file, not an ssd_heads file"), std::string::npos)
      << r.text;

  // SSD heads with other head counts than the run asks for.
  const auto ssd = (dir / "ssd2").string();
  ASSERT_EQ(train("ssd-heads", out, ssd, "--horizontal 2 --vertical 1", 1).exit_code, 0);
  r = train("ssd-heads", out, (dir / "ssd3").string(), "--init " + ssd + "/model.safetensors");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("is missing"), std::string::npos) << r.text;

  // An index whose @dtype does not describe the stored type (fp32 claimed over bf16 bits).
  const auto index = distill_index_path(out);
  {
    h5::Handle file(H5Fopen(index.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    ASSERT_GE(H5Adelete(file.get(), "dtype"), 0);
    h5::attr_string(file.get(), "dtype", "fp32", index);
  }
  r = train("eagle-head", out, (dir / "y").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("index.h5: /hidden is stored as integer16 but @dtype says fp32"), std::string::npos) << r.text;
}

TEST_F(DraftHeads, CondOnlyDataRefusesNullConditionsInOneLine) {
  const auto out = dataset("cond");
  auto r = train("ssd-heads", out, (dir / "a").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("no null-condition rows for --null-fraction 0.1"), std::string::npos) << r.text;
  r = train("ssd-heads", out, (dir / "b").string(), "--null-fraction 0", 2);
  EXPECT_EQ(r.exit_code, 0) << r.text;
}

}  // namespace vispec
