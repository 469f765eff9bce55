#include "workers/batch_memory.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "models/text/text_encoder.h"

namespace vispec {

namespace {
// Keys and values of every layer, one row of `capacity` entries.
int64_t kv_bytes(const GptConfig& c, int64_t capacity, int64_t element) {
  return 2 * c.n_layer * c.kv_heads() * c.head_dim() * capacity * element;
}

int64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : int64_t(size);
}

// "1.50 GiB", "212.0 MiB", "4.0 KiB": a batch plan reads the same for the embedded model and for GPT-XL.
std::string size_text(int64_t bytes) {
  const double b = double(bytes);
  if (b >= double(int64_t(1) << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t(1) << 30));
  if (b >= double(1 << 20)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  return fmt::format("{:.1f} KiB", b / 1024.0);
}
}  // namespace

BatchMemory gpt_batch_memory(const GptConfig& gpt, int64_t element, int64_t streams) {
  BatchMemory m;
  m.kv_per_row = streams * kv_bytes(gpt, gpt.max_seq_len() + kBlockPositions, element);
  // A block's logits (float32, a few live at once: logits, probabilities, a sort's) and hidden states (a layer's
  // several).
  m.work_per_row = streams * kBlockPositions * (4 * gpt.vocab_size * 4 + 16 * gpt.dim * element);
  return m;
}

BatchMemory batch_memory(const JobPlan& plan) {
  const auto& model = plan.model;
  const auto& gpt = model.gpt;
  const int64_t element = model.dtype == "fp32" ? 4 : 2;
  const int64_t streams = plan.decoder.sampling.cfg_scale > 1.0 ? 2 : 1;
  auto m = gpt_batch_memory(gpt, element, streams);
  m.weights = file_bytes(model.gpt_weights) + file_bytes(model.vq_weights);
  int64_t drafters = 0;  // the drafters' KV caches, per stream
  for (const auto& [role, path] : decoder_weight_files(plan.decoder, model)) {
    m.weights += file_bytes(path);
    if (role == "draft_gpt")
      drafters += kv_bytes(model.draft_gpt, model.draft_gpt.max_seq_len() + kBlockPositions, element);
    if (role == "mulo_gpt")
      drafters += kv_bytes(model.mulo.gpt, model.mulo.gpt.max_seq_len() + kBlockPositions, element);
    if (role == "eagle_head") {
      GptConfig one_layer = gpt;
      one_layer.n_layer = 1;
      drafters += kv_bytes(one_layer, gpt.max_seq_len() + kBlockPositions, element);
    }
  }
  if (model.has_text_encoder) m.weights += file_bytes(text_encoder_files(model).weights);
  m.kv_per_row += streams * drafters;
  // The VQ decoder's widest feature maps (full resolution, its first level's channels), once per image.
  const int64_t pixels = model.image_size() * model.image_size();
  m.work_per_row += 6 * pixels * model.vq.ch * model.vq.ch_mult.front() * 4;
  return m;
}

int64_t largest_batch(const BatchMemory& m, int64_t free_bytes) {
  const double usable = kBatchMemoryShare * double(free_bytes) - double(m.weights);
  if (usable < double(m.per_row())) return 0;
  return std::min<int64_t>(kMaxBatchSize, int64_t(usable / double(std::max<int64_t>(1, m.per_row()))));
}

int64_t plan_batch_size(const JobPlan& plan, const BatchMemory& m, int64_t free_bytes, const std::string& device,
                        int64_t journaled) {
  const int64_t fits = largest_batch(m, free_bytes);
  const auto estimate =
      fmt::format("{} per row (KV caches {}, activations and VQ {}), weights {}; {} free on {}, {:.0f}% planned",
                  size_text(m.per_row()), size_text(m.kv_per_row), size_text(m.work_per_row), size_text(m.weights),
                  size_text(free_bytes), device, 100 * kBatchMemoryShare);
  const int64_t asked = plan.job.batch_size;
  if (asked == kAutoBatchSize && journaled > 0) {
    spdlog::info("batch_size: auto: {} rows, as this run's journal has it ({} fit now: {})", journaled, fits, estimate);
    return journaled;
  }
  VISPEC_CHECK(fits > 0, plan.job.file, ": batch_size: not even one row fits the free memory: ", estimate);
  if (asked == kAutoBatchSize) {
    const int64_t batch = std::min(fits, plan.job.unit_size);
    spdlog::info("batch_size: auto: {} rows{} ({})", batch, batch < fits ? " (unit_size)" : "", estimate);
    return batch;
  }
  VISPEC_CHECK(asked <= fits, plan.job.file, ": batch_size: ", asked, " rows need about ",
               size_text(m.weights + asked * m.per_row()), ", more than fits: at most ", fits, " rows (", estimate,
               "); set a smaller batch_size, or batch_size: auto");
  spdlog::debug("batch_size: {} rows ({} fit: {})", asked, fits, estimate);
  return asked;
}

int64_t journaled_batch_size(const std::string& out_dir) {
  std::ifstream journal(out_dir + "/journal.jsonl");
  std::string first;
  if (!journal || !std::getline(journal, first)) return 0;
  const auto header = nlohmann::json::parse(first, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object() || !header.contains("identity") || !header["identity"].is_object()) return 0;
  const auto& batch = header["identity"].value("batch_size", nlohmann::json());
  return batch.is_number_integer() && batch.get<int64_t>() > 0 ? batch.get<int64_t>() : 0;
}

}  // namespace vispec
