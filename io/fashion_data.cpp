#include "io/fashion_data.h"

#include "core/check.h"
#include "io/idx_dataset.h"

namespace vispec {

FashionTensors load_fashion_tensors(const std::string& split, int64_t image_size) {
  auto raw = read_fashion_mnist(split);
  const auto& im = raw.images;
  auto pixels = torch::from_blob(raw.images.pixels.data(), {im.count, 1, im.rows, im.cols}, torch::kUInt8).clone();
  auto x = pixels.to(torch::kFloat32).div(127.5).sub(1.0);
  const int64_t pad_h = image_size - im.rows, pad_w = image_size - im.cols;
  VISPEC_ASSERT(pad_h >= 0 && pad_w >= 0, "image_size smaller than the data");
  x = torch::constant_pad_nd(x, {pad_w / 2, pad_w - pad_w / 2, pad_h / 2, pad_h - pad_h / 2}, -1.0);
  auto labels = torch::from_blob(raw.labels.data(), {int64_t(raw.labels.size())}, torch::kUInt8).to(torch::kInt64);
  return {x.contiguous(), labels};
}

}  // namespace vispec
