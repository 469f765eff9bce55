// The batch a job decodes with (workers/batch_memory.h): `batch_size: auto` reads and writes back as a word, the
// estimate's KV caches are what the caches a decoder makes hold, auto takes the largest batch that fits (at most
// a unit, or the batch a journaled run used), and an explicit batch that cannot fit is refused in one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "decoding/common/cfg_model.h"
#include "decoding/common/decoder_registry.h"
#include "error_of.h"
#include "workers/batch_memory.h"
#include "workers/job_plan.h"
#include "workers/loaded_models.h"

namespace vispec {
namespace {

const std::string kDemo = std::string(VISPEC_SOURCE_DIR) + "/jobs/demo.yaml";

// Bytes of every layer's keys and values in `cache`.
int64_t cache_bytes(const KvCache& cache, int64_t layers) {
  return 2 * layers * cache.keys(0).numel() * int64_t(cache.keys(0).element_size());
}

}  // namespace

TEST(BatchMemory, AutoIsAWordOfTheJobAndReadsBack) {
  const auto plan = plan_job(kDemo, {"batch_size=auto"}, "", /*first_rank=*/false);
  EXPECT_EQ(plan.job.batch_size, kAutoBatchSize);
  EXPECT_NE(resolved_job_yaml(plan.job, plan.decoder.numbers, plan.decoder.words).find("batch_size: auto"),
            std::string::npos);
  const auto bad = test::error_of([&] { plan_job(kDemo, {"batch_size=0"}, "", false); });
  EXPECT_NE(bad.find("batch_size: must be 1 to 4096 or auto, got 0"), std::string::npos) << bad;
}

// The estimate's KV caches per row are the bytes of the caches SD makes for a row of the demo's model and its
// draft GPT, under CFG (two streams), with a block's room past the image.
TEST(BatchMemory, TheKvEstimateIsWhatTheDecodersCachesHold) {
  const auto plan = plan_job(kDemo, {"decoder.name=sd"}, "", /*first_rank=*/false);
  const auto m = batch_memory(plan);
  const auto models = load_models(plan.model, torch::kCPU);
  const CfgModel target(models.gpt, plan.decoder.sampling.cfg_scale);
  ASSERT_TRUE(target.guided());
  const auto tcache = target.make_cache(1, kBlockPositions);
  const auto draft = load_decoder_models(plan.decoder, plan.model, models.gpt, models.vq, torch::kCPU).draft_gpt;
  const auto dcache = CfgModel(draft, plan.decoder.sampling.cfg_scale).make_cache(1, kBlockPositions);
  EXPECT_EQ(m.kv_per_row,
            cache_bytes(tcache, plan.model.gpt.n_layer) + cache_bytes(dcache, plan.model.draft_gpt.n_layer));
  EXPECT_GT(m.work_per_row, 0);
  EXPECT_GT(m.weights, 0);
}

TEST(BatchMemory, AutoTakesTheLargestBatchThatFitsAndAnExplicitOneThatCannotIsRefused) {
  auto plan = plan_job(kDemo, {"batch_size=auto", "unit_size=500"}, "", /*first_rank=*/false);
  BatchMemory m;
  m.weights = 1000;
  m.kv_per_row = 90;
  m.work_per_row = 10;
  // 80% of 20000 is 16000; less the weights, 150 rows of 100 bytes.
  EXPECT_EQ(largest_batch(m, 20000), 150);
  EXPECT_EQ(largest_batch(m, 1300), 0);
  EXPECT_EQ(plan_batch_size(plan, m, 20000, "cpu", 0), 150);
  EXPECT_EQ(plan_batch_size(plan, m, 20000, "cpu", 33), 33);  // a journaled run keeps its batch
  plan.job.unit_size = 64;
  EXPECT_EQ(plan_batch_size(plan, m, 20000, "cpu", 0), 64);  // a batch holds at most a unit
  plan.job.batch_size = 150;
  EXPECT_EQ(plan_batch_size(plan, m, 20000, "cpu", 0), 150);
  plan.job.batch_size = 151;
  const auto refused = test::error_of([&] { plan_batch_size(plan, m, 20000, "cpu", 0); });
  EXPECT_NE(refused.find("batch_size: 151 rows need about"), std::string::npos) << refused;
  EXPECT_NE(refused.find("at most 150 rows"), std::string::npos) << refused;
  EXPECT_EQ(refused.find('\n'), std::string::npos) << refused;
  const auto none = test::error_of([&] { plan_batch_size(plan, m, 1300, "cpu", 0); });
  EXPECT_NE(none.find("not even one row fits"), std::string::npos) << none;
}

TEST(BatchMemory, TheJournaledBatchIsReadFromTheJournalsIdentity) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("vispec-batch-memory-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EXPECT_EQ(journaled_batch_size(dir.string()), 0);  // no journal
  std::ofstream(dir / "journal.jsonl") << R"({"journal": 1, "identity": {"batch_size": 24}})"
                                       << "\n{}\n";
  EXPECT_EQ(journaled_batch_size(dir.string()), 24);
  std::ofstream(dir / "journal.jsonl") << "not json\n";
  EXPECT_EQ(journaled_batch_size(dir.string()), 0);
  fs::remove_all(dir);
}

}  // namespace vispec
