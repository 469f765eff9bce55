// One process running a job: plan the samples, validate everything, load the models once, then decode batch
// after batch and write each sample's PNG, token grid and metrics line. (MPI scale-out builds on this: the
// scheduler hands a worker sample ranges instead of the whole plan.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/job_config.h"
#include "models/model_config.h"

namespace vispec {

struct PlannedSample {
  uint64_t sample_id = 0;  // prompt index * images_per_prompt + image index: the sample's identity everywhere
  int64_t class_id = 0;
  std::string prompt;
};

struct JobPlan {
  JobConfig job;
  ModelConfig model;
  std::vector<PlannedSample> samples;
};

// The samples of a prompt list: sample i * images_per_prompt + j is image j of prompt i. Checks every prompt.
std::vector<PlannedSample> plan_samples(const ModelConfig& model, const std::string& prompts_file,
                                        int64_t images_per_prompt);
// Reads and checks the job file, its model config, its prompts and its decoder. Writes nothing.
JobPlan plan_job(const std::string& job_file, const std::vector<std::string>& overrides = {},
                 const std::string& out_override = "");
// Decodes every sample of the plan and writes OUT/images, OUT/tokens, OUT/metrics.jsonl, OUT/summary.json.
void run_job(const JobPlan& plan);

}  // namespace vispec
