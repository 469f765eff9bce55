// A real distillation job run by the vispec binary, for tests that need a dataset: the embedded model, AR
// with CFG, `per_prompt` samples for each of two prompts in units of `unit_size`.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli.h"

namespace vispec::test {

// A fresh directory named after the running test; removed by the caller.
inline std::filesystem::path test_directory(const std::string& prefix) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      (prefix + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Returns the job's output directory, dir/out-<dtype>-<streams>.
inline std::string run_distill_job(const std::filesystem::path& dir, const std::string& dtype, int per_prompt,
                                   int unit_size, const std::string& streams = "cond+uncond") {
  const auto out = (dir / ("out-" + dtype + "-" + streams)).string();
  std::ofstream(dir / "prompts.txt") << "trouser\nbag\n";
  std::ofstream(dir / "job.yaml") << "model: " << VISPEC_SOURCE_DIR << "/configs/fmnist.yaml\n"
                                  << "prompts: prompts.txt\ndecoder: {name: ar, cfg_scale: 2.0}\n"
                                  << "images_per_prompt: " << per_prompt << "\nunit_size: " << unit_size
                                  << "\nbatch_size: 3\nthreads: 1\n"
                                  << "distill: {streams: " << streams << ", dtype: " << dtype << "}\nout: " << out
                                  << "\n";
  const auto r = run_vispec("run " + (dir / "job.yaml").string());
  EXPECT_EQ(r.exit_code, 0) << r.text;
  return out;
}

}  // namespace vispec::test
