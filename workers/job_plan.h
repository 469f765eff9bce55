// A job, planned: the checked job file, its model config, and the samples its prompt list asks for.
// Sample i * images_per_prompt + j is image j of prompt i: the sample's identity in every file name, every
// random draw and every unit of work, whatever rank or batch decodes it. A prompt line that names no class
// does not stop the job: it is recorded in `errors` (file, line, message) and its sample ids are left unused,
// so every other sample keeps its id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/job_config.h"
#include "models/model_config.h"

namespace vispec {

struct PlannedSample {
  uint64_t sample_id = 0;
  int64_t class_id = 0;
  std::string prompt;
};

struct PromptError {
  std::string file;
  int64_t line = 0;
  std::string message;  // "file:line: prompt: unknown class name 'sock' (known: ...)"
};

struct SamplePlan {
  std::vector<PlannedSample> samples;  // ascending sample id
  uint64_t id_count = 0;               // prompts * images_per_prompt: ids [0, id_count), some possibly unused
  std::vector<PromptError> errors;
};

// Reads the prompt list; an unreadable or empty list is an error (thrown), a bad line is recorded.
SamplePlan plan_samples(const ModelConfig& model, const std::string& prompts_file, int64_t images_per_prompt);

struct JobPlan {
  JobConfig job;
  ModelConfig model;
  SamplePlan plan;
};

// The decode request of `count` consecutive planned samples (a batch of a unit, or of a bench chunk).
struct DecodeRequest;
DecodeRequest make_request(uint64_t seed, const PlannedSample* first, int64_t count);

// Reads and checks the job file, its model config, its prompts and its decoder. Writes nothing.
JobPlan plan_job(const std::string& job_file, const std::vector<std::string>& overrides = {},
                 const std::string& out_override = "");

}  // namespace vispec
