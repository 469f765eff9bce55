#include "train/image_folder.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <filesystem>

#include "core/check.h"
#include "io/jpeg.h"
#include "io/png.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
std::string lower_extension(const fs::path& path) {
  auto ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}
}  // namespace

ImageFolder scan_image_folder(const std::string& root, int64_t max_classes) {
  ImageFolder folder;
  folder.root = root;
  std::error_code ec;
  VISPEC_CHECK(fs::is_directory(root, ec), root, ": not a folder (--images wants one sub-folder of images per class)");
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.is_directory()) folder.classes.push_back(entry.path().filename().string());
  VISPEC_CHECK(!ec, root, ": ", ec.message());
  std::sort(folder.classes.begin(), folder.classes.end());
  VISPEC_CHECK(!folder.classes.empty(), root, ": no class folders (ImageNet's layout: one sub-folder per class)");
  VISPEC_CHECK(int64_t(folder.classes.size()) <= max_classes, root, ": ", folder.classes.size(),
               " class folders, but the model has ", max_classes, " classes");
  for (size_t label = 0; label < folder.classes.size(); ++label) {
    const auto dir = fs::path(root) / folder.classes[label];
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!entry.is_regular_file()) continue;
      const auto ext = lower_extension(entry.path());
      VISPEC_CHECK(ext == ".png" || ext == ".jpg" || ext == ".jpeg", entry.path().string(),
                   ": not a PNG or JPEG image (the files of a class folder are its images)");
      files.push_back(entry.path().string());
    }
    VISPEC_CHECK(!ec, dir.string(), ": ", ec.message());
    VISPEC_CHECK(!files.empty(), dir.string(), ": a class folder without images");
    std::sort(files.begin(), files.end());
    for (auto& f : files) folder.images.push_back({std::move(f), int64_t(label)});
  }
  return folder;
}

torch::Tensor load_folder_image(const std::string& path, int64_t size, int64_t channels) {
  VISPEC_CHECK(channels == 1 || channels == 3, path, ": a VQ of ", channels, " channels (1 or 3 are read)");
  int width = 0, height = 0, depth = 0;
  const auto pixels = lower_extension(path) == ".png" ? read_png(path, width, height, depth)
                                                      : read_jpeg(path, width, height, depth);  // depth 1 or 3
  auto x = torch::from_blob(const_cast<uint8_t*>(pixels.data()), {height, width, depth}, torch::kUInt8)
               .to(torch::kFloat32)
               .permute({2, 0, 1})
               .unsqueeze(0);  // [1, depth, H, W] in 0 .. 255
  if (depth == 1) x = x.expand({1, 3, height, width});
  while (std::min(x.size(2), x.size(3)) >= 2 * size) {
    const int64_t h = x.size(2) / 2 * 2, w = x.size(3) / 2 * 2;  // an odd last row or column is left out
    x = torch::avg_pool2d(x.narrow(2, 0, h).narrow(3, 0, w), 2);
  }
  const double scale = double(size) / double(std::min(x.size(2), x.size(3)));
  const int64_t h = std::max<int64_t>(size, std::llround(double(x.size(2)) * scale)),
                w = std::max<int64_t>(size, std::llround(double(x.size(3)) * scale));
  namespace F = torch::nn::functional;
  x = F::interpolate(x, F::InterpolateFuncOptions()
                            .size(std::vector<int64_t>{h, w})
                            .mode(torch::kBicubic)
                            .align_corners(false)
                            .antialias(true))
          .round()
          .clamp(0, 255);
  x = x.narrow(2, (h - size) / 2, size).narrow(3, (w - size) / 2, size).squeeze(0);  // [3, size, size]
  if (channels == 1) x = x.mean(0, /*keepdim=*/true);
  return (x / 127.5 - 1.0).contiguous();
}

torch::Tensor load_folder_images(const ImageFolder& folder, const std::vector<size_t>& indices, int64_t size,
                                 int64_t channels) {
  std::vector<torch::Tensor> images(indices.size());
  at::parallel_for(0, int64_t(indices.size()), 1, [&](int64_t from, int64_t to) {
    for (int64_t j = from; j < to; ++j)
      images[size_t(j)] = load_folder_image(folder.images[indices[size_t(j)]].path, size, channels);
  });
  return torch::stack(images);
}

bool held_out(size_t index, size_t count) { return count >= 10 && index % 10 == 9; }

std::vector<size_t> split_indices(size_t count, bool test) {
  std::vector<size_t> picked;
  for (size_t i = 0; i < count; ++i)
    if (held_out(i, count) == test || count < 10) picked.push_back(i);
  return picked;
}

}  // namespace vispec
