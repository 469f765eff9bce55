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

// Reads and checks the job file, its model config, its prompts and its decoder. Writes nothing.
JobPlan plan_job(const std::string& job_file, const std::vector<std::string>& overrides = {},
                 const std::string& out_override = "");
// Decodes every sample of the plan and writes OUT/images, OUT/tokens, OUT/metrics.jsonl, OUT/summary.json.
void run_job(const JobPlan& plan);

// "00000042": file stem of a sample's outputs.
std::string sample_stem(uint64_t sample_id);

}  // namespace vispec
