#include "bench/bench_runner.h"

#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>

#include "bench/bench_report.h"
#include "core/check.h"
#include "core/device.h"
#include "core/op_counter.h"
#include "core/logging.h"
#include "decoding/common/decoder_registry.h"
#include "eval/quality.h"
#include "io/image_tensor.h"
#include "workers/job_plan.h"
#include "workers/loaded_models.h"
#include "workers/request_builder.h"

namespace vispec {

namespace {
using Clock = std::chrono::steady_clock;

// Everything one decoder accumulates over the chunks.
struct Tally {
  SampleStats sum;  // counts and phase times summed over samples
  double seconds = 0;
  std::vector<double> chunk_seconds;
  std::vector<torch::Tensor> predictions, features;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}
}  // namespace

nlohmann::json run_bench(const BenchConfig& c, const std::string& results_dir) {
  const auto model = load_model_config(c.model_config);
  const auto sample_plan = plan_samples(model, c.prompts_file, c.images_per_prompt, /*unit_size=*/1);
  VISPEC_CHECK(sample_plan.errors.empty(), sample_plan.errors.front().message);  // a bench judges every prompt
  const auto samples =
      read_samples(model, c.prompts_file, c.prompts_file, c.images_per_prompt, {}, 0, sample_plan.id_count);
  set_threads(c.threads);
  const auto device = pick_device(c.device);
  auto models = load_models(model, device);
  QualityJudge judge(model, device);
  std::vector<std::unique_ptr<Decoder>> decoders;
  for (const auto& e : c.decoders)
    decoders.push_back(make_decoder(e.decoder, load_decoder_models(e.decoder, model, models.gpt, models.vq, device)));
  const int64_t n = int64_t(samples.size()), D = int64_t(decoders.size()), grid = model.gpt.grid_size;
  spdlog::info("bench {}: {} decoders x {} images on {}, chunks of {} on {} rows", c.name, D, n, device.str(),
               c.unit_size, c.batch_size);

  RequestBuilder make_request(model, c.seed, device);
  auto request = [&](int64_t start, int64_t count) {
    auto r = make_request(&samples[start], count);
    r.rows = c.batch_size;
    return r;
  };
  // Untimed warm-up: first calls pay for allocations and (on GPU) kernel selection. One batch of rows is enough.
  for (auto& d : decoders) decode_in_rows(*d, request(0, std::min(c.batch_size, n)));
  // What each decoder asks of LibTorch per image, counted on one more untimed chunk (the counting hook costs
  // time on every op): ATen operator calls (kernel launches on a GPU) and host reads (synchronisations).
  std::vector<double> ops_per_image(size_t(D), 0), reads_per_image(size_t(D), 0);
  for (int64_t d = 0; d < D; ++d) {
    const int64_t count = std::min(c.batch_size, n);
    OpCounter counter;
    decode_in_rows(*decoders[size_t(d)], request(0, count));
    ops_per_image[size_t(d)] = double(counter.ops()) / double(count);
    reads_per_image[size_t(d)] = double(counter.host_reads()) / double(count);
  }

  std::vector<Tally> tally(D);
  std::vector<int64_t> classes;
  for (const auto& s : samples) classes.push_back(s.class_id);
  int64_t chunk = 0;
  for (int64_t start = 0; start < n; start += c.unit_size, ++chunk) {
    const int64_t count = std::min(c.unit_size, n - start);
    const auto req = request(start, count);
    for (int64_t k = 0; k < D; ++k) {
      const int64_t d = (chunk + k) % D;
      const auto t0 = Clock::now();
      const auto result = decode_in_rows(*decoders[d], req);
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      tally[d].seconds += secs;
      tally[d].chunk_seconds.push_back(secs);
      for (const auto& s : result.stats) tally[d].sum += s;
      torch::Tensor images;
      {
        torch::NoGradGuard no_grad;
        images = models.vq->decode_codes(result.tokens.to(device), grid, grid);
      }
      auto j = judge.run(bytes_to_images(images_to_bytes(images)));  // judged as the PNG would store it
      tally[d].predictions.push_back(j.predictions);
      tally[d].features.push_back(j.features);
    }
    spdlog::info("bench {}: {}/{} images per decoder", c.name, start + count, n);
  }

  auto per_image = [](const std::map<std::string, double>& extra, int64_t images) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [key, value] : extra) j[key] = value / double(images);
    return j;
  };
  const auto labels = torch::tensor(classes, torch::kInt64);
  size_t base = 0;
  while (c.decoders[base].label != c.baseline) ++base;
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t d = 0; d < D; ++d) {
    const auto& t = tally[d];
    const auto& s = t.sum;
    const auto q = judge.judge(Judgement{torch::cat(t.predictions), torch::cat(t.features)}, labels);
    std::vector<double> paired;  // per-chunk ratios: both decoders saw the same chunk at nearly the same time
    for (size_t k = 0; k < t.chunk_seconds.size(); ++k)
      paired.push_back(tally[base].chunk_seconds[k] / t.chunk_seconds[k]);
    rows.push_back({{"label", c.decoders[d].label},
                    {"decoder", c.decoders[d].decoder.name},
                    {"params", c.decoders[d].decoder.spec.params},
                    {"words", c.decoders[d].decoder.spec.words},
                    {"images", n},
                    {"target_forwards_per_image", double(s.target_forwards) / double(n)},
                    {"draft_forwards_per_image", double(s.draft_forwards) / double(n)},
                    {"mean_accepted_length", s.mean_accepted_length()},
                    {"acceptance_rate", s.acceptance_rate()},
                    {"idle_row_fraction", s.idle_fraction()},
                    {"mean_tree_depth", s.mean_tree_depth()},
                    {"aten_ops_per_image", ops_per_image[size_t(d)]},
                    {"host_reads_per_image", reads_per_image[size_t(d)]},
                    {"ms_per_image", 1e3 * t.seconds / double(n)},
                    {"images_per_s", double(n) / t.seconds},
                    {"speedup", tally[base].seconds / t.seconds},
                    {"speedup_median_chunk", median(paired)},
                    {"phase_ms_per_image",
                     {{"draft", s.draft_ms / double(n)},
                      {"verify", s.verify_ms / double(n)},
                      {"resample", s.resample_ms / double(n)},
                      {"bookkeeping", s.bookkeeping_ms / double(n)}}},
                    {"extra_per_image", per_image(s.extra, n)},
                    {"class_agreement", q.class_agreement},
                    {"fid", q.fid},
                    {"fid_reference_images", q.reference_images}});
    spdlog::info("bench {}: {:<16} {:.1f} ms/image  speedup {:.3f}  {}", c.name, c.decoders[d].label,
                 1e3 * t.seconds / double(n), tally[base].seconds / t.seconds, q.to_line());
  }
  nlohmann::json out = {{"name", c.name},
                        {"bench_file", c.file},
                        {"model", model.name},
                        {"date_utc", utc_timestamp()},
                        {"device", device.str()},
                        {"threads", at::get_num_threads()},
                        {"libtorch", TORCH_VERSION},
                        {"seed", c.seed},
                        {"images_per_decoder", n},
                        {"batch_size", c.batch_size},
                        {"unit_size", c.unit_size},
                        {"baseline", c.baseline},
                        {"decoders", rows}};
  write_bench_report(out, results_dir);
  return out;
}

}  // namespace vispec
