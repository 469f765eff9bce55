#include "workers/job_plan.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "decoding/common/decoder_registry.h"
#include "io/atomic_file.h"
#include "io/job_config.h"
#include "io/prompts.h"
#include "io/run_layout.h"
#include "models/text/prompt_template.h"
#include "models/text/text_encoder.h"
#include "workers/caption_features.h"
#include "workers/loaded_models.h"

namespace vispec {

namespace {
// What a prompt line conditions on, filled into `sample`, or false with `error` set: the one judgement the
// planning scan and the workers' reads share, so that they skip the same lines.
bool judge_prompt(const ModelConfig& model, const std::string& file, const Prompt& p, PlannedSample& sample,
                  std::string& error) {
  const std::string where = file + ":" + std::to_string(p.line) + ": prompt: ";
  if (const size_t at = invalid_utf8_at(p.text); at != std::string::npos) {
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02X", unsigned(static_cast<unsigned char>(p.text[at])));
    // The line itself stays out of the message: records and logs must be valid UTF-8.
    error = where + "not valid UTF-8 (byte " + byte + " at column " + std::to_string(at + 1) + ")";
    return false;
  }
  sample.prompt = p.text;
  if (model.gpt.prompted()) {
    // Both streams' ids from a template (the target's, or MuLo-SD's drafter's own); false with error set.
    const auto judge = [&](const PromptConfig& prompt, const std::string& whose, std::vector<int64_t>& ids,
                           std::vector<int64_t>& null_ids) {
      PromptIds made;
      error = prompt_template_for(model, prompt).judge(p.text, made);
      if (!error.empty()) error = file + ":" + std::to_string(p.line) + ": " + whose + error;
      ids = std::move(made.prompt);
      null_ids = std::move(made.null_prompt);
      return error.empty();
    };
    if (!judge(model.prompt, "", sample.prompt_ids, sample.null_prompt_ids)) return false;
    return !(model.has_mulo() && model.mulo.own_prompt) ||
           judge(model.mulo.prompt, "MuLo-SD's drafter's ", sample.drafter_prompt_ids, sample.drafter_null_prompt_ids);
  }
  if (model.gpt.text_conditional()) {
    if (p.text.rfind(kFeaturesPrefix, 0) != 0) {
      if (model.has_text_encoder) return true;  // a caption (T5 truncates what is too long, as LlamaGen does)
      error = where +
              "a caption needs a text encoder, which this model config has none of (text_encoder:); "
              "or give the caption's features as npy:FILE.npy";
      return false;
    }
    sample.features = resolve_features_path(file, p.text.substr(std::strlen(kFeaturesPrefix)));
    error = check_caption_features(model.gpt, sample.features);
    if (!error.empty()) error = where + error;
    return error.empty();
  }
  sample.class_id = model.class_id(p.text);
  if (sample.class_id < 0) {
    std::string known;
    for (const auto& c : model.classes) known += (known.empty() ? "" : ", ") + c;
    error = where + "unknown class name '" + quoted_prompt(p.text) + "' (known: " + known + ", or an id below " +
            std::to_string(model.gpt.num_classes) + ")";
  }
  return sample.class_id >= 0;
}
}  // namespace

namespace {
// A unit's record of its prompts (UnitStart's prompts and fnv), one prompt at a time.
void note_prompt(UnitStart& unit, const std::string& text) {
  ++unit.prompts;
  unit.fnv = fnv1a("\n", 1, fnv1a(text.data(), text.size(), unit.fnv));
}
}  // namespace

SamplePlan plan_samples(const ModelConfig& model, const std::string& prompts_file, int64_t images_per_prompt,
                        int64_t unit_size) {
  if (model.gpt.prompted()) prompt_template_for(model);  // its files' errors stop the job, before any line
  const uint64_t ipp = uint64_t(images_per_prompt), U = uint64_t(unit_size);
  PromptReader reader(prompts_file);
  SamplePlan plan;
  uint64_t prompts = 0;
  for (Prompt p; reader.next(p); ++prompts) {
    // The plan's bounds, checked before it grows past them (and with no product that can overflow).
    const std::string where = prompts_file + ":" + std::to_string(p.line) + ": ";
    VISPEC_CHECK(prompts + 1 <= uint64_t(kMaxSampleIds) / ipp, where, prompts + 1, " prompts x images_per_prompt ", ipp,
                 " pass the ", kMaxSampleIds, " sample ids a job may have: split the job");
    VISPEC_CHECK(((prompts + 1) * ipp + U - 1) / U <= uint64_t(kMaxUnits), where, (prompts + 1) * ipp,
                 " sample ids in units of unit_size ", U, " pass the ", kMaxUnits,
                 " units a job may have: raise unit_size");
    // Units whose first id is an image of this prompt start at its line; every unit holding one of its ids
    // (the last of them may start earlier) notes its text.
    while (plan.units.size() * U < (prompts + 1) * ipp)
      plan.units.push_back({p.offset, p.line, prompts, 0, kFnv1aBasis});
    for (uint64_t u = prompts * ipp / U; u <= ((prompts + 1) * ipp - 1) / U; ++u) note_prompt(plan.units[u], p.text);
    std::string error;
    PlannedSample sample;
    if (!judge_prompt(model, prompts_file, p, sample, error)) plan.errors.push_back({prompts_file, p.line, error});
    else plan.samples += images_per_prompt;
  }
  VISPEC_CHECK(prompts > 0, prompts_file, ": the prompts file holds no prompts");
  plan.id_count = prompts * ipp;
  plan.prompts_fnv = reader.bytes_fnv();
  return plan;
}

std::vector<PlannedSample> read_samples(const ModelConfig& model, const std::string& source,
                                        const std::string& prompts_file, int64_t images_per_prompt,
                                        const UnitStart& start, uint64_t first_id, uint64_t end_id) {
  const uint64_t ipp = uint64_t(images_per_prompt);
  PromptReader reader(source, start.offset, start.line);
  std::vector<PlannedSample> samples;
  UnitStart read{start.offset, start.line, start.prompt, 0, kFnv1aBasis};
  Prompt p;
  for (uint64_t prompt = start.prompt; prompt * ipp < end_id && reader.next(p); ++prompt) {
    note_prompt(read, p.text);
    std::string error;
    PlannedSample sample;
    if (!judge_prompt(model, prompts_file, p, sample, error)) continue;  // recorded by the planning scan
    for (uint64_t id = std::max(prompt * ipp, first_id); id < std::min((prompt + 1) * ipp, end_id); ++id) {
      sample.sample_id = id;
      samples.push_back(sample);
    }
  }
  // Prompts other than the planned ones would make other images, or none, under ids the journal calls done.
  VISPEC_CHECK(start.prompts == 0 || (read.prompts == start.prompts && read.fnv == start.fnv), source,
               ": the prompts of sample ids [", first_id, ", ", end_id, ") from line ", start.line, " are not the ",
               start.prompts, " planned (", read.prompts, " read, ", read.fnv == start.fnv ? "the same" : "other",
               " text): the file changed after the job was planned");
  return samples;
}

void snapshot_prompts(const std::string& prompts_file, const std::string& out, uint64_t fnv) {
  const auto snapshot = prompts_snapshot_path(out);
  if (file_exists(snapshot)) {
    if (file_fnv(snapshot) == fnv) return;  // a resume's, the planned bytes
    spdlog::warn("{} is not the planned prompts: copied again from {}", snapshot, prompts_file);
  }
  // Copied while hashed: bytes other than the planned ones mean the file changed since planning.
  AtomicFile copy(snapshot);
  uint64_t copied = kFnv1aBasis;
  read_chunks(prompts_file, [&](const char* data, size_t size) {
    copied = fnv1a(data, size, copied);
    copy.write(data, size);
  });
  VISPEC_CHECK(copied == fnv, prompts_file, ": the prompts file changed while the job was being planned; run again");
  copy.commit();
}

JobPlan plan_job(const std::string& job_file, const std::vector<std::string>& overrides,
                 const std::string& out_override, bool first_rank) {
  JobPlan plan;
  plan.job = load_job_config(job_file, overrides, out_override);
  plan.model = load_model_config(plan.job.model_config);
  apply_weight_overrides(plan.model, plan.job.model_weights);
  if (!plan.job.model_dtype.empty()) plan.model.dtype = plan.job.model_dtype;
  plan.decoder = parse_decoder(plan.job.decoder, plan.model.sampling);
  check_decoder_model(plan.decoder, plan.model);
  if (!first_rank) return plan;
  // Found by a worker after the journal's header was written, a bad weights file would make the rerun with
  // the fixed file look like another job.
  std::vector<std::string> files{plan.model.gpt_weights, plan.model.vq_weights};
  if (plan.model.has_text_encoder) files.push_back(plan.model.text_encoder_dir);
  for (const auto& [role, path] : decoder_weight_files(plan.decoder, plan.model)) files.push_back(path);
  check_weight_files_exist(plan.model, files);  // one line naming the line that asked for a missing one
  check_model_weights(plan.model);
  check_text_encoder_weights(plan.model);
  check_decoder_weights(plan.decoder, plan.model);  // the drafters' files too: a bad one is the job's error now
  // The run's copy of the prompts (io/run_layout.h) is a file vispec writes, and --new removes: never the
  // user's prompt file itself.
  std::error_code same_error;
  VISPEC_CHECK(!std::filesystem::equivalent(plan.job.prompts_file, prompts_snapshot_path(plan.job.out_dir), same_error),
               plan.job.prompts_file, ": the prompts file has the name of the run's own copy of it (",
               prompts_snapshot_path(plan.job.out_dir), "); rename it or choose another out");
  plan.plan = plan_samples(plan.model, plan.job.prompts_file, plan.job.images_per_prompt, plan.job.unit_size);
  // A bad line is recorded while the job goes on, but a file with no line this model takes (captions for a
  // class model or one without a text encoder, class names for a text model) is the job's error, now: not a
  // run that journals empty units and exits 5.
  const auto& errors = plan.plan.errors;
  if (plan.plan.samples == 0 && !errors.empty())
    VISPEC_FAIL(errors.front().message, errors.size() == 1
                                            ? std::string()
                                            : " (and so do the other " + std::to_string(errors.size() - 1) +
                                                  " prompt lines: none is one this model takes)");
  return plan;
}

}  // namespace vispec
