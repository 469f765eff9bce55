#include "eval/run_eval.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>

#include "core/check.h"
#include "core/device.h"
#include "io/atomic_file.h"
#include "io/fashion_data.h"
#include "io/image_tensor.h"
#include "io/metrics.h"
#include "io/run_layout.h"
#include "io/sample_images.h"
#include "models/vq/load_vq.h"

namespace vispec {

namespace {
std::string model_config_of(const RunEvalOptions& o) {
  if (!o.model_config.empty()) return o.model_config;
  const auto path = summary_path(o.out_dir);
  VISPEC_CHECK(file_exists(path), path, ": not found; pass --config MODEL.yaml to say which model made the run");
  nlohmann::json summary;
  try {
    summary = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    VISPEC_FAIL(path, ": not valid JSON: ", e.what());
  }
  VISPEC_CHECK(summary.contains("model_config"), path, ": model_config: missing; pass --config MODEL.yaml");
  return summary["model_config"].get<std::string>();
}

// The run's images [N, C, H, W] as written, and their prompts' class ids, ordered by sample id. A sample logged
// twice (a rerun) counts once.
std::pair<torch::Tensor, torch::Tensor> read_run_images(const std::string& out) {
  std::map<uint64_t, std::pair<int64_t, int64_t>> class_and_unit;
  for (const auto& r : read_metrics(metrics_path(out)))
    class_and_unit[r.at("sample_id").get<uint64_t>()] = {r.at("class_id").get<int64_t>(), r.value("unit", int64_t(-1))};
  VISPEC_CHECK(!class_and_unit.empty(), metrics_path(out), ": no samples recorded");
  std::vector<torch::Tensor> images;
  std::vector<int64_t> classes;
  SampleImages files(out);
  for (const auto& [id, class_unit] : class_and_unit) {
    int w = 0, h = 0, c = 0;
    auto px = files.read(id, class_unit.second, metrics_path(out), w, h, c);
    images.push_back(torch::from_blob(px.data(), {1, h, w, c}, torch::kUInt8).clone());
    classes.push_back(class_unit.first);
  }
  return {bytes_to_images(torch::cat(images)), torch::tensor(classes, torch::kInt64)};
}
}  // namespace

QualityReport evaluate_run(const RunEvalOptions& o) {
  set_threads(o.threads);
  const auto device = pick_device(o.device);
  const auto model = load_model_config(model_config_of(o));
  // The judge first: a model without a classifier (a released model's config) is that one line, not a
  // mismatch between its images and a classifier it does not have.
  QualityJudge judge(model, device);
  auto [images, classes] = read_run_images(o.out_dir);
  VISPEC_CHECK(images.size(1) == model.classifier.in_channels && images.size(2) == model.image_size() &&
                   images.size(3) == model.image_size(),
               o.out_dir, ": its images are ", images.size(1), "x", images.size(2), "x", images.size(3), " but ",
               model.file, " judges ", model.classifier.in_channels, "x", model.image_size(), "x", model.image_size());
  const auto report = judge.judge(images, classes);
  auto json = report.to_json();
  json["model_config"] = model.file;
  json["classifier"] = model.classifier_weights;
  write_file_atomic(eval_path(o.out_dir), json.dump(2) + "\n");
  return report;
}

nlohmann::json measure_floors(const std::string& model_config, const std::vector<int64_t>& sizes,
                              const std::string& results_dir, const std::string& device_name, int threads) {
  set_threads(threads);
  const auto device = pick_device(device_name);
  const auto model = load_model_config(model_config);
  QualityJudge judge(model, device);
  auto vq = load_vq(model, device);
  const auto train = load_fashion_tensors("train", model.image_size());
  nlohmann::json rows = nlohmann::json::array();
  for (const int64_t n : sizes) {
    VISPEC_CHECK(n >= 2 && n <= train.images.size(0), "floors: size ", n, " must be in [2, ", train.images.size(0),
                 "]");
    // A fixed random subset (seed 0): the first n of one permutation, so n=1000 is inside n=10000.
    auto gen = at::detail::createCPUGenerator(0);
    auto idx = torch::randperm(train.images.size(0), gen).narrow(0, 0, n);
    auto real = train.images.index_select(0, idx);
    auto labels = train.labels.index_select(0, idx);
    std::vector<torch::Tensor> recon;
    {
      torch::NoGradGuard no_grad;
      for (int64_t i = 0; i < n; i += 64) {
        auto x = real.narrow(0, i, std::min<int64_t>(64, n - i)).to(device);
        recon.push_back(vq->decode_codes(vq->encode(x), x.size(2) / vq->config().downsample(),
                                         x.size(3) / vq->config().downsample())
                            .to(torch::kCPU));
      }
    }
    // Both judged as they would be written: 8-bit quantised (real images already are).
    const auto real_report = judge.judge(real, labels);
    const auto recon_report = judge.judge(bytes_to_images(images_to_bytes(torch::cat(recon))), labels);
    spdlog::info("floors n={}: real train {} | VQ reconstructions {}", n, real_report.to_line(),
                 recon_report.to_line());
    rows.push_back({{"n", n}, {"real_train", real_report.to_json()}, {"vq_reconstruction", recon_report.to_json()}});
  }
  nlohmann::json out = {{"model_config", model.file},
                        {"classifier", model.classifier_weights},
                        {"device", device.str()},
                        {"floors", rows}};
  make_directories(results_dir);
  write_file_atomic(results_dir + "/floors.json", out.dump(2) + "\n");
  std::string md =
      "| images n | FID real train vs test | FID VQ reconstructions vs test | class agreement real | class agreement "
      "VQ |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const auto& r : rows)
    md += fmt::format("| {} | {:.3f} | {:.3f} | {:.4f} | {:.4f} |\n", r["n"].get<int64_t>(),
                      r["real_train"]["fid"].get<double>(), r["vq_reconstruction"]["fid"].get<double>(),
                      r["real_train"]["class_agreement"].get<double>(),
                      r["vq_reconstruction"]["class_agreement"].get<double>());
  write_file_atomic(results_dir + "/floors.md", md);
  return out;
}

}  // namespace vispec
