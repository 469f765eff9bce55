#include "workers/job_plan.h"

#include <cstdio>

#include "core/check.h"
#include "decoding/decoder.h"
#include "decoding/decoder_factory.h"
#include "io/prompts.h"
#include "workers/loaded_models.h"

namespace vispec {

SamplePlan plan_samples(const ModelConfig& model, const std::string& prompts_file, int64_t images_per_prompt) {
  const auto prompts = read_prompts(prompts_file);
  std::string known;
  for (const auto& c : model.classes) known += (known.empty() ? "" : ", ") + c;
  SamplePlan plan;
  plan.id_count = uint64_t(prompts.size()) * uint64_t(images_per_prompt);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    const std::string where = prompts_file + ":" + std::to_string(p.line) + ": prompt: ";
    if (const size_t at = invalid_utf8_at(p.text); at != std::string::npos) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02X", unsigned(static_cast<unsigned char>(p.text[at])));
      // The line itself stays out of the message: records and logs must be valid UTF-8.
      plan.errors.push_back({prompts_file, p.line, where + "not valid UTF-8 (byte " + byte + " at column " +
                                                       std::to_string(at + 1) + ")"});
      continue;
    }
    const int64_t id = model.class_id(p.text);
    if (id < 0) {
      plan.errors.push_back({prompts_file, p.line,
                             where + "unknown class name '" + p.text + "' (known: " + known + ", or an id below " +
                                 std::to_string(model.gpt.num_classes) + ")"});
      continue;
    }
    for (int64_t j = 0; j < images_per_prompt; ++j)
      plan.samples.push_back({uint64_t(i) * uint64_t(images_per_prompt) + uint64_t(j), id, p.text});
  }
  return plan;
}

DecodeRequest make_request(uint64_t seed, const PlannedSample* first, int64_t count) {
  DecodeRequest req;
  req.seed = seed;
  std::vector<int64_t> classes;
  for (int64_t i = 0; i < count; ++i) {
    req.sample_ids.push_back(first[i].sample_id);
    classes.push_back(first[i].class_id);
  }
  req.class_ids = torch::tensor(classes, torch::kInt64);
  return req;
}

JobPlan plan_job(const std::string& job_file, const std::vector<std::string>& overrides,
                 const std::string& out_override) {
  JobPlan plan;
  plan.job = load_job_config(job_file, overrides, out_override);
  plan.model = load_model_config(plan.job.model_config);
  if (!plan.job.model_dtype.empty()) plan.model.dtype = plan.job.model_dtype;
  validate_decoder_spec(plan.job.decoder, plan.model);
  // Found by a worker after the journal's header was written, a bad weights file would make the rerun with
  // the fixed file look like another job.
  check_model_weights(plan.model);
  plan.plan = plan_samples(plan.model, plan.job.prompts_file, plan.job.images_per_prompt);
  return plan;
}

}  // namespace vispec
