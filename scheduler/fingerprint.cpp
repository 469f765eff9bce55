#include "scheduler/fingerprint.h"

#include <cstdio>
#include <filesystem>

#include "core/check.h"
#include "core/device.h"
#include "io/atomic_file.h"
#include "io/digest_cache.h"
#include "kernels/kernel_check.h"
#include "models/checkpoints/load.h"
#include "models/text/text_encoder.h"

namespace vispec {

namespace {
std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

nlohmann::json file_identity(const std::string& path) {
  const auto d = cached_file_digest(path);
  return {{"bytes", d.bytes}, {"crc32", crc32_hex(d.crc32)}};
}

// One file: its size and CRC-32; a shard index: the index's and every shard's, by file name.
nlohmann::json weights_identity(const std::string& path) {
  const auto files = weight_files(path);
  if (files.size() == 1 && files[0] == path) return file_identity(path);
  nlohmann::json shards = nlohmann::json::object();
  for (const auto& f : files) shards[std::filesystem::path(f).filename().string()] = file_identity(f);
  return {{"index", file_identity(path)}, {"shards", shards}};
}
}  // namespace

std::string fnv1a_hex(const std::string& bytes) { return hex(fnv1a(bytes.data(), bytes.size())); }

nlohmann::json job_identity(const JobPlan& plan) {
  const auto& job = plan.job;
  nlohmann::json weights = {{"gpt", weights_identity(plan.model.gpt_weights)},
                            {"vq", weights_identity(plan.model.vq_weights)}};
  // Every field the decoder reads, defaults filled in: a field written out at its default is the same job,
  // and a default that changes between versions is another one.
  nlohmann::json decoder = {{"name", plan.decoder.name}, {"params", plan.decoder.numbers}};
  if (!plan.decoder.words.empty()) decoder["words"] = plan.decoder.words;
  for (const auto& [role, path] : decoder_weight_files(plan.decoder, plan.model))
    weights[role] = weights_identity(path);
  if (plan.model.has_text_encoder) {
    const auto t5 = text_encoder_files(plan.model);
    weights["text_encoder"] = {{"weights", weights_identity(t5.weights)},
                               {"tokenizer", file_identity(t5.tokenizer)},
                               {"config", file_identity(t5.config)}};
  }
  // A prompted model's tokenizer files make its prompts' ids: another tokenizer is another job.
  for (const auto& [role, path] :
       {std::pair<const char*, const std::string&>{"tokenizer", plan.model.prompt.tokenizer_json},
        {"emu3_tiktoken", plan.model.prompt.emu3_tiktoken},
        {"emu3_vision_tokens", plan.model.prompt.emu3_vision_tokens}})
    if (!path.empty()) weights[role] = file_identity(path);
  nlohmann::json identity = {
      {"model_config_fnv", fnv1a_hex(read_file(plan.model.file))},
      {"weights", weights},
      {"dtype", plan.model.dtype},
      {"device_model", device_model(pick_device(job.device, 0))},
      // The kernels decide the outputs' last bits (kernels/kernel_check.h); on a GPU asking runs their check.
      {"kernels", kernels::kernel_set(pick_device(job.device, 0), model_dtype(plan.model.dtype))},
      {"software", software_versions()},
      {"prompts_fnv", hex(plan.plan.prompts_fnv)},
      {"images_per_prompt", job.images_per_prompt},
      {"seed", job.seed},
      {"decoder", decoder},
      {"unit_size", job.unit_size},
      {"batch_size", job.batch_size},
      {"distill", job.distill.enabled ? nlohmann::json{{"streams", job.distill.streams},
                                                       {"dtype", dtype_name(job.distill.dtype)},
                                                       {"compression", job.distill.compression}}
                                      : nlohmann::json(nullptr)}};
  // Shards and files are different outputs in OUT: one run directory holds one kind. Files, the default, add
  // nothing, so that the runs made before shards existed keep their fingerprint.
  if (job.output != "files") identity["output"] = job.output;
  return identity;
}

std::string fingerprint(const nlohmann::json& identity) { return fnv1a_hex(identity.dump()); }

}  // namespace vispec
