// A test with its own empty directory, made before each test and removed after it:
// TEMP/vispec_<prefix>_<pid>_<test name>.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace vispec::test {

class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("vispec_" + prefix_ + "_" + std::to_string(::getpid()) + "_" +
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::filesystem::path dir;

 private:
  std::string prefix_;
};

}  // namespace vispec::test
