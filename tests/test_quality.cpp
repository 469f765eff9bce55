// The shipped evaluation classifier and the judges built on it, on real Fashion-MNIST test images:
// accuracy >= 90%, class agreement on real images equals the classifier's accuracy (computed here directly
// from its logits), and `vispec eval` on those images written as PNGs gives the same numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "eval/quality.h"
#include "io/atomic_file.h"
#include "io/fashion_data.h"
#include "io/image_tensor.h"
#include "io/metrics.h"
#include "io/png.h"
#include "io/run_layout.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
const std::string kConfig = std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml";

double direct_accuracy(Classifier& net, const torch::Tensor& images, const torch::Tensor& labels) {
  torch::NoGradGuard no_grad;
  int64_t correct = 0;
  for (int64_t i = 0; i < images.size(0); i += 64) {
    const int64_t b = std::min<int64_t>(64, images.size(0) - i);
    correct += net->forward(images.narrow(0, i, b)).argmax(1).eq(labels.narrow(0, i, b)).sum().item<int64_t>();
  }
  return double(correct) / double(images.size(0));
}
}  // namespace

TEST(Quality, ShippedClassifierAccuracyAndAgreementOnRealImages) {
  const auto model = load_model_config(kConfig);
  auto net = load_classifier(model, torch::kCPU);
  const auto test = load_fashion_tensors("test", model.image_size());
  const double accuracy = direct_accuracy(net, test.images, test.labels);
  std::cout << "classifier test accuracy " << accuracy << " on " << test.images.size(0) << " images\n";
  EXPECT_GE(accuracy, 0.90);
  QualityJudge judge(model, torch::kCPU);
  const auto judged = judge.run(test.images);
  const auto report = judge.judge(judged, test.labels);
  EXPECT_DOUBLE_EQ(report.class_agreement, accuracy);
  EXPECT_EQ(report.images, 10000);
  EXPECT_NEAR(report.fid, 0.0, 1e-6) << "the test set against its own statistics";
  // Prompted with the wrong class (label + 1), agreement collapses: the measure can fail.
  EXPECT_LT(judge.judge(judged, (test.labels + 1) % 10).class_agreement, 0.1);
}

TEST(Quality, EvalOfPngsEqualsTheJudgeInMemory) {
  const fs::path dir = fs::temp_directory_path() / ("vispec_eval_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  make_directories((dir / "images").string());
  const auto model = load_model_config(kConfig);
  const auto test = load_fashion_tensors("test", model.image_size());
  const int64_t n = 200;
  const auto bytes = images_to_bytes(test.images.narrow(0, 0, n));
  std::vector<nlohmann::json> records;
  for (int64_t i = 0; i < n; ++i) {
    const auto px = bytes[i].contiguous();
    write_png(image_path(dir.string(), uint64_t(i)),
              std::vector<uint8_t>(px.data_ptr<uint8_t>(), px.data_ptr<uint8_t>() + px.numel()), 32, 32, 1);
    records.push_back({{"sample_id", i}, {"class_id", test.labels[i].item<int64_t>()}});
  }
  append_metrics(metrics_path(dir.string()), records);

  const auto r = test::run_vispec("eval " + dir.string() + " --config " + kConfig + " --threads 1", true);
  ASSERT_EQ(r.exit_code, 0) << r.text;
  EXPECT_NE(r.text.find("200 images: class agreement"), std::string::npos) << r.text;
  const auto json = nlohmann::json::parse(read_file(eval_path(dir.string())));
  QualityJudge judge(model, torch::kCPU);
  const auto expected = judge.judge(test.images.narrow(0, 0, n), test.labels.narrow(0, 0, n));
  EXPECT_EQ(json["images"].get<int64_t>(), n);
  EXPECT_DOUBLE_EQ(json["class_agreement"].get<double>(), expected.class_agreement);
  EXPECT_NEAR(json["fid"].get<double>(), expected.fid, 1e-6 * expected.fid);

  // A sample listed in metrics.jsonl whose PNG is missing: one line naming the file, exit 2.
  fs::remove(image_path(dir.string(), 7));
  const auto missing = test::run_vispec("eval " + dir.string() + " --config " + kConfig);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(test::count_lines(missing.text), 1) << missing.text;
  EXPECT_NE(missing.text.find("00000007.png: missing"), std::string::npos) << missing.text;

  // A model without a classifier (a released model's config): that, in one line, not a size mismatch.
  std::string config = read_file(kConfig);
  config = config.substr(0, config.find("\nclassifier:")) + "\n";
  const auto bare = (dir / "bare.yaml").string();
  write_file_atomic(
      bare, std::regex_replace(config, std::regex("fmnist/"), std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist/"));
  const auto judgeless = test::run_vispec("eval " + dir.string() + " --config " + bare);
  EXPECT_EQ(judgeless.exit_code, 2);
  EXPECT_EQ(test::count_lines(judgeless.text), 1) << judgeless.text;
  EXPECT_NE(judgeless.text.find("bare.yaml: no 'classifier' section"), std::string::npos) << judgeless.text;
  fs::remove_all(dir);
}

}  // namespace vispec
