// Fashion-MNIST from Debian's dataset-fashion-mnist package (IDX files, gzip-compressed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

// Where the IDX files are: $VISPEC_FASHION_MNIST_DIR if set (a machine without the Debian package, such as
// the GPU machine of scripts/gpu_check.sh), else the package's directory.
std::string fashion_mnist_dir();

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};

IdxImages read_idx_images(const std::string& path);             // magic 2051
std::vector<uint8_t> read_idx_labels(const std::string& path);  // magic 2049

struct LabelledImages {
  IdxImages images;
  std::vector<uint8_t> labels;
};
// split: "train" (60k) or "test" (10k); dir defaults to the Debian package's location.
LabelledImages read_fashion_mnist(const std::string& split, const std::string& dir = fashion_mnist_dir());

}  // namespace vispec
