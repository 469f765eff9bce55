#include "workers/job_runner.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/device.h"
#include "decoding/decoder_factory.h"
#include "io/atomic_file.h"
#include "io/metrics.h"
#include "io/npy.h"
#include "io/png.h"
#include "io/prompts.h"
#include "workers/loaded_models.h"

namespace vispec {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// [B, C, H, W] in ~[-1, 1] -> uint8 rows of one image, LlamaGen's rounding: clamp, (x + 1) / 2 * 255 + 0.5.
std::vector<uint8_t> image_bytes(const torch::Tensor& image) {
  auto x = image.detach().to(torch::kCPU, torch::kFloat32).clamp(-1, 1).add(1).mul(127.5).add(0.5);
  auto hwc = x.to(torch::kUInt8).permute({1, 2, 0}).contiguous();
  return std::vector<uint8_t>(hwc.data_ptr<uint8_t>(), hwc.data_ptr<uint8_t>() + hwc.numel());
}
}  // namespace

std::string sample_stem(uint64_t sample_id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08llu", static_cast<unsigned long long>(sample_id));
  return buf;
}

JobPlan plan_job(const std::string& job_file, const std::vector<std::string>& overrides,
                 const std::string& out_override) {
  JobPlan plan;
  plan.job = load_job_config(job_file, overrides, out_override);
  plan.model = load_model_config(plan.job.model_config);
  validate_decoder_spec(plan.job.decoder);
  const auto prompts = read_prompts(plan.job.prompts_file);
  std::string known;
  for (const auto& c : plan.model.classes) known += (known.empty() ? "" : ", ") + c;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    const int64_t id = plan.model.class_id(p.text);
    VISPEC_CHECK(id >= 0, plan.job.prompts_file, ":", p.line, ": prompt: unknown class name '", p.text,
                 "' (known: ", known, ", or an id below ", plan.model.gpt.num_classes, ")");
    for (int64_t j = 0; j < plan.job.images_per_prompt; ++j)
      plan.samples.push_back({uint64_t(i) * uint64_t(plan.job.images_per_prompt) + uint64_t(j), id, p.text});
  }
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
  std::remove((out + "/metrics.jsonl").c_str());

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

    std::vector<nlohmann::json> records;
    for (int64_t b = 0; b < B; ++b) {
      const auto& s = plan.samples[start + b];
      const auto& st = result.stats[b];
      const std::string stem = sample_stem(s.sample_id);
      auto bytes = image_bytes(images[b]);
      write_png(out + "/images/" + stem + ".png", bytes, int(images.size(3)), int(images.size(2)),
                int(images.size(1)));
      auto row = result.tokens[b].to(torch::kInt32).contiguous();
      write_npy_int32(out + "/tokens/" + stem + ".npy",
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
    append_metrics(out + "/metrics.jsonl", records);
    done += B;
    const double elapsed = seconds_since(t0), rate = double(done) / elapsed;
    spdlog::info("{}/{} images  {:.2f} images/s  ETA {:.0f} s", done, total, rate, double(total - done) / rate);
  }
  const double wall = seconds_since(t0);
  nlohmann::json summary = {{"job", job.file},
                            {"model", plan.model.name},
                            {"decoder", decoder->name()},
                            {"images", done},
                            {"wall_s", wall},
                            {"images_per_s", double(done) / wall},
                            {"target_forwards_per_image", double(target_forwards) / double(std::max<int64_t>(1, done))},
                            {"device", device.str()},
                            {"seed", job.seed}};
  write_file_atomic(out + "/summary.json", summary.dump(2) + "\n");
  spdlog::info("done: {} images in {:.2f} s ({:.2f} images/s) -> {}", done, wall, double(done) / wall, out);
}

}  // namespace vispec
