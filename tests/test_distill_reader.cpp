// Reading distillation data back in C++ (what the head trainers use): a real two-unit job written by the
// vispec binary, read across the unit boundary through the index; hidden states equal a fresh teacher-forced
// pass of the same model (fp32) and their bf16 rounding (bf16); bad inputs give one line naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli.h"
#include "distill_job.h"
#include "core/check.h"
#include "io/distill_reader.h"
#include "io/npy.h"
#include "io/run_layout.h"
#include "models/model_config.h"
#include "workers/distill_capture.h"
#include "workers/loaded_models.h"

namespace vispec {

namespace fs = std::filesystem;

// The fixture has external linkage: the unity build includes this file in a larger one.
class DistillReading : public ::testing::Test {
 protected:
  void SetUp() override { dir = test::test_directory("vispec_distill_"); }
  void TearDown() override { fs::remove_all(dir); }
  // 6 samples in units of 4 and 2; returns the output directory.
  std::string run_job(const std::string& dtype) { return test::run_distill_job(dir, dtype, 3, 4); }
  fs::path dir;
};

TEST_F(DistillReading, RowsAcrossUnitsEqualAFreshTeacherForcedPass) {
  const auto out32 = run_job("fp32"), out16 = run_job("bf16");
  DistillReader reader(distill_index_path(out32)), reader16(distill_index_path(out16));
  ASSERT_EQ(reader.rows(), 6);
  EXPECT_EQ(reader.streams(), 2);
  EXPECT_EQ(reader.hidden_dim(), 128);
  ASSERT_EQ(reader.units().size(), 2u);
  EXPECT_EQ(reader.units()[0].length, 4);
  EXPECT_EQ(reader.units()[1].length, 2);
  EXPECT_EQ(reader16.dtype(), DistillDtype::kBFloat16);

  const auto rows = reader.read(2, 3), rows16 = reader16.read(2, 3);  // samples 2, 3 (unit 0) and 4 (unit 1)
  EXPECT_EQ(rows.sample_id, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(rows.class_id, (std::vector<int64_t>{1, 8, 8}));  // trouser, bag, bag
  std::vector<int64_t> all_tokens;
  for (int64_t id : rows.sample_id) {
    const auto t = read_npy_int32(tokens_path(out32, uint64_t(id)));
    all_tokens.insert(all_tokens.end(), t.begin(), t.end());
  }
  EXPECT_EQ(std::vector<int64_t>(rows.tokens.begin(), rows.tokens.end()), all_tokens);

  const auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  auto models = load_models(model, torch::kCPU);
  const auto tokens = torch::tensor(all_tokens, torch::kInt64).view({3, 256});
  const auto expected = teacher_forced_hidden(models.gpt, class_conditions(rows.class_id), tokens, 2);  // [3, 2, T, D]
  const auto got = torch::from_blob(const_cast<float*>(rows.hidden.data()), expected.sizes(), torch::kFloat32);
  const auto got16 = torch::from_blob(const_cast<float*>(rows16.hidden.data()), expected.sizes(), torch::kFloat32);
  const double diff = (got - expected).abs().max().item<double>();
  const double diff16 = ((got16 - expected).abs() / (expected.abs() + 1e-3)).max().item<double>();
  std::cout << "fp32 max |diff| " << diff << ", bf16 max relative diff " << diff16 << "\n";
  EXPECT_LT(diff, 1e-4);
  EXPECT_LT(diff16, 1.0 / 128);  // bf16 keeps 8 significant bits: rounding error <= 2^-9 relative
  EXPECT_GT(diff16, 0.0) << "bf16 rows should not be exact";
}

TEST_F(DistillReading, BadInputsGiveOneLine) {
  const auto out = run_job("bf16");
  try {
    DistillReader reader(distill_unit_path(out, 0));
    FAIL() << "a unit file is not an index";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unit-000000.h5: no units table"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "not.h5") << "plain text";
  EXPECT_THROW(DistillReader((dir / "not.h5").string()), Error);
  DistillReader reader(distill_index_path(out));
  EXPECT_THROW(reader.read(5, 2), Error);
}

}  // namespace vispec
