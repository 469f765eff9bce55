#include "workers/job_runner.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/device.h"
#include "decoding/decoder_factory.h"
#include "io/atomic_file.h"
#include "io/image_tensor.h"
#include "io/metrics.h"
#include "io/npy.h"
#include "io/png.h"
#include "io/prompts.h"
#include "io/run_layout.h"
#include "workers/loaded_models.h"

namespace vispec {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

std::vector<PlannedSample> plan_samples(const ModelConfig& model, const std::string& prompts_file,
                                        int64_t images_per_prompt) {
  const auto prompts = read_prompts(prompts_file);
  std::string known;
  for (const auto& c : model.classes) known += (known.empty() ? "" : ", ") + c;
  std::vector<PlannedSample> samples;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    const int64_t id = model.class_id(p.text);
    VISPEC_CHECK(id >= 0, prompts_file, ":", p.line, ": prompt: unknown class name '", p.text, "' (known: ", known,
                 ", or an id below ", model.gpt.num_classes, ")");
    for (int64_t j = 0; j < images_per_prompt; ++j)
      samples.push_back({uint64_t(i) * uint64_t(images_per_prompt) + uint64_t(j), id, p.text});
  }
  return samples;
}

JobPlan plan_job(const std::string& job_file, const std::vector<std::string>& overrides,
                 const std::string& out_override) {
  JobPlan plan;
  plan.job = load_job_config(job_file, overrides, out_override);
  plan.model = load_model_config(plan.job.model_config);
  validate_decoder_spec(plan.job.decoder);
  plan.samples = plan_samples(plan.model, plan.job.prompts_file, plan.job.images_per_prompt);
  return plan;
}

void run_job(const JobPlan& plan) {
  const auto& job = plan.job;
  set_threads(job.threads);
  const auto device = pick_device(job.device);
  const std::string out = job.out_dir;
  make_directories(out + "/images");
  make_directories(out + "/tokens");
  // Until the journal (scheduler issue) makes runs resumable, a rerun regenerates everything: start a fresh log.
  std::remove(metrics_path(out).c_str());

  auto t_load = Clock::now();
  auto models = load_models(plan.model, device);
  auto decoder = make_decoder(job.decoder, DecoderModels{models.gpt});
  spdlog::info("job {}: {} samples, decoder {}, model {} on {} (loaded in {:.2f} s)", job.file, plan.samples.size(),
               decoder->name(), plan.model.name, device.str(), seconds_since(t_load));

  const int64_t grid = plan.model.gpt.grid_size, total = int64_t(plan.samples.size());
  int64_t done = 0, target_forwards = 0;
  auto t0 = Clock::now();
  for (int64_t start = 0; start < total; start += job.batch_size) {
    const int64_t B = std::min(job.batch_size, total - start);
    DecodeRequest req;
    req.seed = job.seed;
    std::vector<int64_t> classes;
    for (int64_t b = 0; b < B; ++b) {
      req.sample_ids.push_back(plan.samples[start + b].sample_id);
      classes.push_back(plan.samples[start + b].class_id);
    }
    req.class_ids = torch::tensor(classes, torch::kInt64);
    auto t_batch = Clock::now();
    auto result = decoder->decode(req);
    torch::Tensor images;
    {
      torch::NoGradGuard no_grad;
      images = models.vq->decode_codes(result.tokens.to(device), grid, grid);
    }
    const double batch_ms = seconds_since(t_batch) * 1e3;

    const auto bytes = images_to_bytes(images);  // [B, H, W, C]
    std::vector<nlohmann::json> records;
    for (int64_t b = 0; b < B; ++b) {
      const auto& s = plan.samples[start + b];
      const auto& st = result.stats[b];
      const auto px = bytes[b];
      write_png(image_path(out, s.sample_id),
                std::vector<uint8_t>(px.data_ptr<uint8_t>(), px.data_ptr<uint8_t>() + px.numel()),
                int(bytes.size(2)), int(bytes.size(1)), int(bytes.size(3)));
      auto row = result.tokens[b].to(torch::kInt32).contiguous();
      write_npy_int32(tokens_path(out, s.sample_id),
                      std::vector<int32_t>(row.data_ptr<int32_t>(), row.data_ptr<int32_t>() + row.numel()),
                      {grid, grid});
      target_forwards += st.target_forwards;
      records.push_back({{"sample_id", s.sample_id}, {"prompt", s.prompt}, {"class_id", s.class_id},
                         {"seed", job.seed}, {"decoder", decoder->name()},
                         {"target_forwards", st.target_forwards}, {"draft_forwards", st.draft_forwards},
                         {"mean_accepted_length", st.mean_accepted_length()},
                         {"acceptance_rate", st.acceptance_rate()}, {"wall_ms", batch_ms / double(B)},
                         {"batch_size", B}});
    }
    append_metrics(metrics_path(out), records);
    done += B;
    const double elapsed = seconds_since(t0), rate = double(done) / elapsed;
    spdlog::info("{}/{} images  {:.2f} images/s  ETA {:.0f} s", done, total, rate, double(total - done) / rate);
  }
  const double wall = seconds_since(t0);
  nlohmann::json summary = {{"job", job.file},
                            {"model", plan.model.name},
                            {"model_config", std::filesystem::absolute(plan.model.file).lexically_normal().string()},
                            {"decoder", decoder->name()},
                            {"images", done},
                            {"wall_s", wall},
                            {"images_per_s", double(done) / wall},
                            {"target_forwards_per_image", double(target_forwards) / double(std::max<int64_t>(1, done))},
                            {"device", device.str()},
                            {"seed", job.seed}};
  write_file_atomic(summary_path(out), summary.dump(2) + "\n");
  spdlog::info("done: {} images in {:.2f} s ({:.2f} images/s) -> {}", done, wall, double(done) / wall, out);
}

}  // namespace vispec
