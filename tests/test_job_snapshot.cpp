// OUT/job.yaml (io/job_config.h's resolved_job_yaml): the job a run keeps so that `vispec resume OUT` needs no
// flags. For every decoder, the kept job reads back as the same job: the decoder's every field (defaults and
// the model's sampling defaults filled in) and every job field, with absolute paths, from any directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "decoding/common/decoder_registry.h"
#include "io/atomic_file.h"
#include "workers/job_plan.h"

namespace vispec {

TEST(JobSnapshot, EveryDecodersResolvedJobReadsBackAsTheSameJob) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("vispec-job-snapshot-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string job_file = std::string(VISPEC_SOURCE_DIR) + "/jobs/demo.yaml";
  for (const auto& name : known_decoders()) {
    const auto plan = plan_job(job_file, {"decoder.name=" + name, "batch_size=7", "model.dtype=bf16"},
                               (dir / "out").string(), /*first_rank=*/false);
    const auto kept = (dir / "job.yaml").string();
    write_file_atomic(kept, resolved_job_yaml(plan.job, plan.decoder.numbers, plan.decoder.words));
    const auto cwd = fs::current_path();
    fs::current_path(fs::temp_directory_path());  // the paths in it are absolute: any directory reads it
    JobPlan again;
    try {
      again = plan_job(kept, {}, "", /*first_rank=*/false);
    } catch (const std::exception& e) {
      fs::current_path(cwd);
      FAIL() << name << ": the kept job does not read back: " << e.what() << "\n" << read_file(kept);
    }
    fs::current_path(cwd);
    EXPECT_EQ(again.decoder.numbers, plan.decoder.numbers) << name;
    EXPECT_EQ(again.decoder.words, plan.decoder.words) << name;
    EXPECT_EQ(again.job.batch_size, 7) << name;
    EXPECT_EQ(again.job.model_dtype, "bf16") << name;
    EXPECT_EQ(again.job.out_dir, fs::absolute(dir / "out").string()) << name;
    EXPECT_EQ(fs::path(again.job.prompts_file), fs::absolute(plan.job.prompts_file).lexically_normal()) << name;
    EXPECT_EQ(fs::path(again.job.model_config), fs::absolute(plan.job.model_config).lexically_normal()) << name;
    for (const auto& [field, same] : std::vector<std::pair<const char*, bool>>{
             {"images_per_prompt", again.job.images_per_prompt == plan.job.images_per_prompt},
             {"seed", again.job.seed == plan.job.seed},
             {"device", again.job.device == plan.job.device},
             {"unit_size", again.job.unit_size == plan.job.unit_size},
             {"schedule", again.job.schedule == plan.job.schedule},
             {"cuda_graphs", again.job.cuda_graphs == plan.job.cuda_graphs}})
      EXPECT_TRUE(same) << name << ": " << field;
  }
  fs::remove_all(dir);
}

}  // namespace vispec
