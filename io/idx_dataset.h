// Fashion-MNIST from Debian's dataset-fashion-mnist package (IDX files, gzip-compressed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};

IdxImages read_idx_images(const std::string& path);   // magic 2051
std::vector<uint8_t> read_idx_labels(const std::string& path);  // magic 2049

struct LabelledImages {
  IdxImages images;
  std::vector<uint8_t> labels;
};
// split: "train" (60k) or "test" (10k); dir defaults to the Debian package's location.
LabelledImages read_fashion_mnist(const std::string& split, const std::string& dir = kFashionMnistDir);

}  // namespace vispec
