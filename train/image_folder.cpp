#include "train/image_folder.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/check.h"
#include "io/jpeg.h"
#include "io/pil_resize.h"
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
  // Each entry's type through the calls that return an error (a symlink loop, a dangling link, a file gone):
  // one line naming it, where the throwing ones would end as an internal error.
  const auto type_of = [](const fs::directory_entry& entry) {
    std::error_code type_ec;
    const auto status = entry.status(type_ec);
    VISPEC_CHECK(!type_ec, entry.path().string(), ": ", type_ec.message());
    return status.type();
  };
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (type_of(entry) == fs::file_type::directory) folder.classes.push_back(entry.path().filename().string());
  VISPEC_CHECK(!ec, root, ": ", ec.message());
  std::sort(folder.classes.begin(), folder.classes.end());
  VISPEC_CHECK(!folder.classes.empty(), root, ": no class folders (ImageNet's layout: one sub-folder per class)");
  VISPEC_CHECK(int64_t(folder.classes.size()) <= max_classes, root, ": ", folder.classes.size(),
               " class folders, but the model has ", max_classes, " classes");
  for (size_t label = 0; label < folder.classes.size(); ++label) {
    const auto dir = fs::path(root) / folder.classes[label];
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (type_of(entry) != fs::file_type::regular) continue;
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
  auto pixels = lower_extension(path) == ".png" ? read_png(path, width, height, depth)
                                                : read_jpeg(path, width, height, depth);  // depth 1 or 3
  // LlamaGen's center_crop_arr, on Pillow's resampling (io/pil_resize.h). A gray image is resized as is: Pillow's
  // convert("RGB") repeats it over three channels, each resampled alone, so repeating it afterwards is the same.
  while (std::min(width, height) >= 2 * size) {
    pixels = pil_resize(pixels, width, height, depth, width / 2, height / 2, PilFilter::kBox);
    width /= 2, height /= 2;
  }
  const double scale = double(size) / double(std::min(width, height));
  // Python's round(): half to even, as nearbyint rounds in the default rounding mode.
  const int w = int(std::nearbyint(width * scale)), h = int(std::nearbyint(height * scale));
  VISPEC_CHECK(w >= size && h >= size, path, ": ", width, "x", height, " px do not resize to ", size, " px");
  pixels = pil_resize(pixels, width, height, depth, w, h, PilFilter::kBicubic);
  auto x = torch::from_blob(pixels.data(), {h, w, depth}, torch::kUInt8)
               .narrow(0, (h - size) / 2, size)
               .narrow(1, (w - size) / 2, size)
               .permute({2, 0, 1})
               .to(torch::kFloat32);  // [depth, size, size] in 0 .. 255, a copy
  if (depth == 1) x = x.expand({3, size, size});
  if (channels == 1) x = x.mean(0, /*keepdim=*/true);
  // torchvision's ToTensor then Normalize(0.5, 0.5), operation for operation: the same float32 values.
  return ((x / 255.0f - 0.5f) / 0.5f).contiguous();
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
