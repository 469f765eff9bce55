// Training images from a folder in ImageNet's layout (train/image_folder.h): classes in the sorted order of
// their folders, LlamaGen's centre crop (box halving while the short side is at least twice the size, then
// bicubic), gray repeated over RGB and alpha dropped, and one line for what it cannot read.
#include <gtest/gtest.h>
#include <png.h>
#include <zlib.h>
// jpeglib.h needs FILE and size_t first.
#include <cstdio>
#include <jpeglib.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include <filesystem>
#include <functional>
#include <string>
#include <tuple>

#include "core/check.h"
#include "io/jpeg.h"
#include "io/npy_tensor.h"
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

// LlamaGen's crop run by Pillow itself (the .venv's pillow, through VISPEC_TORCH_PYTHON), then torchvision's
// ToTensor and Normalize(0.5, 0.5) as torch operations: vispec's image equals it in every float32 bit. Sizes that
// halve into odd sides, odd sides, no resize, an upscale, gray, and a side whose scaled size is 22.5 (Python's
// round() gives 22, rounding half to even).
TEST_F(ImageFolderTest, TheCentreCropEqualsLlamaGensOnPillowBitForBit) {
  const auto busy = [](int y, int x, int c) { return (37 * x + 91 * y + 53 * c + (x * y) % 13 * 11) % 256; };
  const std::vector<std::tuple<std::string, int, int, int, int>> images = {
      // name, width, height, channels, size
      {"a.png", 200, 150, 3, 16}, {"b.png", 257, 513, 3, 16}, {"c.png", 16, 16, 3, 16}, {"d.png", 17, 40, 1, 16},
      {"e.png", 45, 33, 3, 16},   {"f.png", 10, 12, 3, 16},   {"g.png", 30, 16, 3, 12}};
  std::ofstream(dir / "crop.py") << R"(import sys
import numpy as np, torch
from PIL import Image

def centre_crop(image, size):  # LlamaGen's center_crop_arr
    while min(*image.size) >= 2 * size:
        image = image.resize(tuple(side // 2 for side in image.size), resample=Image.BOX)
    scale = size / min(*image.size)
    image = image.resize(tuple(round(side * scale) for side in image.size), resample=Image.BICUBIC)
    a = np.array(image)
    top, left = (a.shape[0] - size) // 2, (a.shape[1] - size) // 2
    return Image.fromarray(a[top:top + size, left:left + size])

for arg in sys.argv[1:]:
    name, size = arg.split(":")
    x = torch.from_numpy(np.array(centre_crop(Image.open(name).convert("RGB"), int(size)), np.uint8, copy=True))
    x = x.permute(2, 0, 1).contiguous().to(torch.float32).div(255)
    half = torch.tensor([0.5, 0.5, 0.5])[:, None, None]
    np.save(name + ".npy", x.sub_(half).div_(half).numpy())
)";
  std::string args;
  for (const auto& [name, width, height, channels, size] : images) {
    png(name, width, height, channels, busy);
    args += " " + name + ":" + std::to_string(size);
  }
  const std::string cmd = "cd " + dir.string() + " && " + VISPEC_TORCH_PYTHON + " crop.py" + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const auto& [name, width, height, channels, size] : images) {
    const auto want = read_npy_tensor((dir / (name + ".npy")).string());
    const auto got = load_folder_image((dir / name).string(), size, 3);
    ASSERT_EQ(got.sizes(), want.sizes()) << name;
    EXPECT_TRUE(torch::equal(got, want)) << name << ": " << (got - want).abs().max().item<double>() * 127.5
                                         << " levels apart at most";
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

// A JPEG written here by libjpeg at quality 100: RGB (within the codec's rounding), gray, and CMYK (inverted ink,
// as Photoshop and PIL write it) converted as PIL converts it.
std::string write_jpeg(const std::string& path, int components, J_COLOR_SPACE space,
                       const std::vector<uint8_t>& pixel) {
  jpeg_compress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_compress(&info);
  FILE* f = std::fopen(path.c_str(), "wb");
  jpeg_stdio_dest(&info, f);
  info.image_width = info.image_height = 16;
  info.input_components = components;
  info.in_color_space = space;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  jpeg_start_compress(&info, TRUE);
  std::vector<uint8_t> row;
  for (int x = 0; x < 16; ++x) row.insert(row.end(), pixel.begin(), pixel.end());
  while (info.next_scanline < info.image_height) {
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&info, &r, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::fclose(f);
  return path;
}

TEST_F(ImageFolderTest, JpegImagesAreReadAsPilReadsThem) {
  const auto rgb = load_folder_image(write_jpeg((dir / "rgb.jpg").string(), 3, JCS_RGB, {200, 100, 50}), 16, 3);
  for (int c = 0; c < 3; ++c)
    EXPECT_NEAR(rgb[c].mean().item<double>(), (c == 0 ? 200 : c == 1 ? 100 : 50) / 127.5 - 1.0, 2 / 127.5) << c;
  const auto gray = load_folder_image(write_jpeg((dir / "gray.JPEG").string(), 1, JCS_GRAYSCALE, {90}), 16, 3);
  EXPECT_TRUE(torch::allclose(gray[0], gray[2])) << "gray is repeated over RGB";
  EXPECT_NEAR(gray.mean().item<double>(), 90 / 127.5 - 1.0, 1 / 127.5);
  // Stored inverted: C = 255 - 205 = 50, M = 100, Y = 150, K = 255 - 235 = 20: PIL's R = (255 - K) -
  // C (255 - K) / 255 = 235 - 46 = 189, G = 235 - 92 = 143, B = 235 - 138 = 97.
  int width = 0, height = 0, channels = 0;
  const auto cmyk =
      read_jpeg(write_jpeg((dir / "cmyk.jpg").string(), 4, JCS_CMYK, {205, 155, 105, 235}), width, height, channels);
  ASSERT_EQ(channels, 3);
  for (int c = 0; c < 3; ++c)
    EXPECT_NEAR(int(cmyk[size_t(8 * 16 * 3 + 8 * 3 + c)]), c == 0 ? 189 : c == 1 ? 143 : 97, 2) << c;
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
  std::ofstream(dir / "dog/notes.txt") << "a dog\n";
  EXPECT_NE(message().find((dir / "dog/notes.txt").string() + ": not a PNG or JPEG image"), std::string::npos)
      << message();
  std::filesystem::remove(dir / "dog/notes.txt");
  std::filesystem::copy_file(dir / "cat/0.png", dir / "dog/1.jpg");  // a PNG named .jpg: found, then not read
  EXPECT_EQ(message(), "(accepted)");
  try {
    load_folder_image((dir / "dog/1.jpg").string(), 2, 3);
    FAIL() << "read a PNG as a JPEG";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "dog/1.jpg").string() + ": not a readable JPEG"), std::string::npos)
        << e.what();
  }
}

// Image files are untrusted: each is checked for what it declares before anything is allocated for it, and what
// Pillow refuses is refused, one line naming the file, never an internal error.
TEST_F(ImageFolderTest, BombsTruncatedFilesAndLinkLoopsAreOneLineNamingTheFile) {
  const auto error_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  int width = 0, height = 0, channels = 0;
  // A JPEG whose frame header (SOF) claims 65500 x 65500 pixels: 4.3 billion, 12.9 GB to decode.
  const auto jpg = write_jpeg((dir / "bomb.jpg").string(), 3, JCS_RGB, {1, 2, 3});
  std::string bytes;
  {
    std::ifstream in(jpg, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto sof = bytes.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  for (size_t at : {sof + 5, sof + 7}) bytes[at] = char(0xFF), bytes[at + 1] = char(0xDC);  // height, width
  std::ofstream(jpg, std::ios::binary) << bytes;
  EXPECT_EQ(error_of([&] { read_jpeg(jpg, width, height, channels); }),
            jpg +
                ": declares 65500x65500 = 4290250000 pixels, more than the 178956970 an image may have (Pillow's "
                "decompression-bomb limit)");
  // A PNG whose header (IHDR, its CRC made right) claims the same.
  const auto bomb_png = png("bomb.png", 2, 2, 1, [](int, int, int) { return 7; });
  {
    std::ifstream in(bomb_png, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t ihdr = bytes.find("IHDR");
  ASSERT_NE(ihdr, std::string::npos);
  for (size_t at : {ihdr + 4, ihdr + 8}) bytes.replace(at, 4, std::string("\x00\x00\xFF\xDC", 4));
  const uint32_t crc = uint32_t(::crc32(0, reinterpret_cast<const Bytef*>(bytes.data() + ihdr), 17));
  for (int i = 0; i < 4; ++i) bytes[ihdr + 17 + size_t(i)] = char((crc >> (24 - 8 * i)) & 0xFF);
  std::ofstream(bomb_png, std::ios::binary) << bytes;
  EXPECT_NE(error_of([&] { load_folder_image(bomb_png, 16, 3); }).find(bomb_png + ": declares 65500x65500"),
            std::string::npos)
      << error_of([&] { load_folder_image(bomb_png, 16, 3); });
  // A JPEG cut short: libjpeg would fill its missing rows with gray; Pillow refuses it.
  const auto cut = write_jpeg((dir / "cut.jpg").string(), 3, JCS_RGB, {200, 100, 50});
  {
    std::ifstream in(cut, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() * 2 / 3);
  EXPECT_EQ(error_of([&] { read_jpeg(cut, width, height, channels); }),
            cut + ": not a readable JPEG (libjpeg: Premature end of JPEG file)");
  // A class folder holding a symlink loop.
  png("cat/0.png", 2, 2, 1, [](int, int, int) { return 0; });
  std::filesystem::create_symlink(dir / "cat" / "loop.png", dir / "cat" / "loop.png");
  EXPECT_EQ(error_of([&] { scan_image_folder(dir.string(), 10); }),
            (dir / "cat" / "loop.png").string() + ": Too many levels of symbolic links");
}

}  // namespace
}  // namespace vispec
