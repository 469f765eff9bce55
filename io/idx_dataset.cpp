#include "io/idx_dataset.h"

#include <zlib.h>

#include <cstdlib>

#include "core/check.h"

namespace vispec {

namespace {
// The whole (possibly gzip-compressed) file; gzread passes plain files through unchanged.
std::vector<uint8_t> read_maybe_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  VISPEC_CHECK(f != nullptr, path, ": cannot open (is dataset-fashion-mnist installed?)");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  VISPEC_CHECK(n == 0, path, ": read error");
  return out;
}
uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t(b[at]) << 24) | (uint32_t(b[at + 1]) << 16) | (uint32_t(b[at + 2]) << 8) | b[at + 3];
}
}  // namespace

IdxImages read_idx_images(const std::string& path) {
  auto bytes = read_maybe_gz(path);
  VISPEC_CHECK(bytes.size() >= 16 && be32(bytes, 0) == 2051, path, ": not an IDX image file");
  IdxImages out;
  out.count = be32(bytes, 4);
  out.rows = be32(bytes, 8);
  out.cols = be32(bytes, 12);
  VISPEC_CHECK(bytes.size() == size_t(16 + out.count * out.rows * out.cols), path, ": truncated IDX image file");
  out.pixels.assign(bytes.begin() + 16, bytes.end());
  return out;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  auto bytes = read_maybe_gz(path);
  VISPEC_CHECK(bytes.size() >= 8 && be32(bytes, 0) == 2049, path, ": not an IDX label file");
  VISPEC_CHECK(bytes.size() == 8 + size_t(be32(bytes, 4)), path, ": truncated IDX label file");
  return std::vector<uint8_t>(bytes.begin() + 8, bytes.end());
}

std::string fashion_mnist_dir() {
  const char* dir = std::getenv("VISPEC_FASHION_MNIST_DIR");
  return dir && *dir ? dir : "/usr/share/datasets/fashion-mnist";
}

LabelledImages read_fashion_mnist(const std::string& split, const std::string& dir) {
  VISPEC_CHECK(split == "train" || split == "test", "fashion-mnist: unknown split '", split, "'");
  const std::string prefix = dir + "/" + (split == "train" ? "train" : "t10k");
  LabelledImages out{read_idx_images(prefix + "-images-idx3-ubyte.gz"),
                     read_idx_labels(prefix + "-labels-idx1-ubyte.gz")};
  VISPEC_CHECK(int64_t(out.labels.size()) == out.images.count, prefix, ": image and label counts differ");
  return out;
}

}  // namespace vispec
