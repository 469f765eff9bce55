// Training images from a folder in ImageNet's layout (train/image_folder.h): classes in the sorted order of
// their folders, LlamaGen's centre crop (box halving while the short side is at least twice the size, then
// bicubic), gray repeated over RGB and alpha dropped, and one line for what it cannot read.
#include <gtest/gtest.h>
#include <png.h>

#include <cstring>

#include <filesystem>

#include "core/check.h"
#include "io/png.h"
#include "train/image_folder.h"
#include "temp_dir_test.h"

namespace vispec {
namespace {

class ImageFolderTest : public test::TempDirTest {
 protected:
  ImageFolderTest() : TempDirTest("image_folder") {}
  // A PNG of `channels` channels, pixel (y, x, c) = f(y, x, c).
  std::string png(const std::string& name, int width, int height, int channels,
                  const std::function<int(int, int, int)>& f) {
    std::vector<uint8_t> pixels;
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        for (int c = 0; c < channels; ++c) pixels.push_back(uint8_t(f(y, x, c)));
    const auto path = (dir / name).string();
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    write_png(path, pixels, width, height, channels);
    return path;
  }
};

TEST_F(ImageFolderTest, AnImageOfTheModelsSizeIsReadPixelForPixel) {
  const auto f = [](int y, int x, int c) { return (7 * y + 3 * x + 50 * c) % 256; };
  const auto x = load_folder_image(png("a.png", 8, 8, 3, f), 8, 3);
  ASSERT_EQ(x.sizes(), (std::vector<int64_t>{3, 8, 8}));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 8; ++y)
      for (int i = 0; i < 8; ++i) ASSERT_NEAR(x[c][y][i].item<double>(), f(y, i, c) / 127.5 - 1.0, 1e-6);
}

TEST_F(ImageFolderTest, ALargeImageIsBoxHalvedAndCentreCropped) {
  // 32 x 16 px of 2x2 blocks, for a 4 px model: halved twice (short side 16 -> 8 -> 4: each pixel a block's
  // mean), the bicubic step at scale 1, then the centre 4 of the 8 columns.
  const auto f = [](int y, int x, int) { return 16 * (y / 4) + 4 * (x / 4); };
  const auto x = load_folder_image(png("wide.png", 32, 16, 1, f), 4, 3);
  ASSERT_EQ(x.sizes(), (std::vector<int64_t>{3, 4, 4}));
  for (int y = 0; y < 4; ++y)
    for (int i = 0; i < 4; ++i) {
      const double want = (16 * y + 4 * (i + 2)) / 127.5 - 1.0;  // columns 2 .. 5 of 8
      for (int c = 0; c < 3; ++c) ASSERT_NEAR(x[c][y][i].item<double>(), want, 1e-6) << y << " " << i;
    }
}

TEST_F(ImageFolderTest, AlphaIsDroppedAndAOneChannelVqGetsTheMeanOfRgb) {
  // RGBA 30, 60, 90 with alpha 0, 128 and 255: the colour stays (PIL's convert("RGB")), not composited onto black.
  std::vector<uint8_t> rgba;
  for (int i = 0; i < 16; ++i) rgba.insert(rgba.end(), {30, 60, 90, uint8_t(i % 3 == 0 ? 0 : i % 3 == 1 ? 128 : 255)});
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = image.height = 4;
  image.format = PNG_FORMAT_RGBA;
  const auto path = (dir / "rgba.png").string();
  ASSERT_TRUE(png_image_write_to_file(&image, path.c_str(), 0, rgba.data(), 0, nullptr));
  const auto x = load_folder_image(path, 4, 3);
  for (int c = 0; c < 3; ++c)
    EXPECT_TRUE(torch::allclose(x[c], torch::full({4, 4}, 30 * (c + 1) / 127.5 - 1.0), 0, 1e-6)) << c;
  EXPECT_TRUE(torch::allclose(load_folder_image(path, 4, 1), torch::full({1, 4, 4}, 60 / 127.5 - 1.0), 0, 1e-6));
}

TEST_F(ImageFolderTest, ClassesAreTheSortedFoldersAndEveryTenthImageIsHeldOut) {
  const auto f = [](int, int, int) { return 0; };
  for (int i = 0; i < 3; ++i) png("zebra/" + std::to_string(i) + ".png", 2, 2, 1, f);
  for (int i = 0; i < 9; ++i) png("ant/" + std::to_string(i) + ".png", 2, 2, 1, f);
  const auto folder = scan_image_folder(dir.string(), 10);
  EXPECT_EQ(folder.classes, (std::vector<std::string>{"ant", "zebra"}));
  ASSERT_EQ(folder.images.size(), 12u);
  EXPECT_EQ(folder.images[8].label, 0);
  EXPECT_EQ(folder.images[9].label, 1);
  EXPECT_TRUE(held_out(9, 12));
  EXPECT_FALSE(held_out(8, 12));
  EXPECT_FALSE(held_out(9, 9));                             // fewer than ten: nothing held out
  EXPECT_THROW(scan_image_folder(dir.string(), 1), Error);  // two classes for a model of one
}

TEST_F(ImageFolderTest, WhatCannotBeReadIsOneLineNamingIt) {
  const auto f = [](int, int, int) { return 0; };
  png("cat/0.png", 2, 2, 1, f);
  std::filesystem::create_directories(dir / "dog");
  const auto message = [&] {
    try {
      scan_image_folder(dir.string(), 10);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message().find((dir / "dog").string() + ": a class folder without images"), std::string::npos) << message();
  std::filesystem::copy_file(dir / "cat/0.png", dir / "dog/1.jpg");
  EXPECT_NE(message().find((dir / "dog/1.jpg").string() + ": not a PNG"), std::string::npos) << message();
}

}  // namespace
}  // namespace vispec
