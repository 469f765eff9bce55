#include <gtest/gtest.h>
#include <torch/torch.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  torch::set_num_threads(1);  // CTest runs tests side by side on a 2-core machine
  return RUN_ALL_TESTS();
}
