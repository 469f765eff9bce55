#include "io/png.h"

#include <png.h>

#include <csetjmp>
#include <cstring>

#include "core/check.h"
#include "io/pixel_budget.h"
#include "io/atomic_file.h"

namespace vispec {

namespace {
void append_bytes(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), length);
}
void no_flush(png_structp) {}
}  // namespace

std::string encode_png(const std::vector<uint8_t>& pixels, int width, int height, int channels) {
  VISPEC_ASSERT(channels == 1 || channels == 3, "png channels");
  VISPEC_ASSERT(pixels.size() == size_t(width) * height * channels, "png size");
  std::string encoded;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    VISPEC_FAIL("PNG encoding of a ", width, "x", height, " image failed");
  }
  png_set_write_fn(png, &encoded, append_bytes, no_flush);
  png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), 8,
               channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y)
    png_write_row(png, const_cast<png_bytep>(pixels.data() + size_t(y) * width * channels));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return encoded;
}

FileDigest write_png(const std::string& path, const std::vector<uint8_t>& pixels, int width, int height, int channels,
                     bool sync_directory) {
  return write_file_atomic(path, encode_png(pixels, width, height, channels), sync_directory);
}

std::vector<uint8_t> decode_png(const std::string& bytes, const std::string& where, int& width, int& height,
                                int& channels, int64_t max_pixels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  VISPEC_CHECK(png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()), where, ": not a readable PNG");
  if (int64_t(image.width) * int64_t(image.height) > max_pixels) {  // before anything is allocated for it
    png_image_free(&image);
    check_pixel_budget(where, image.width, image.height, max_pixels);
  }
  const bool color = (image.format & PNG_FORMAT_FLAG_COLOR) != 0, alpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  channels = color ? 3 : 1;
  // Alpha is read and dropped, not composited onto black as libpng would: PIL's convert("RGB") does that, and so
  // do the image folders of LlamaGen's trainers.
  image.format = color ? (alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB) : (alpha ? PNG_FORMAT_GA : PNG_FORMAT_GRAY);
  std::vector<uint8_t> out(PNG_IMAGE_SIZE(image));
  VISPEC_CHECK(png_image_finish_read(&image, nullptr, out.data(), 0, nullptr), where, ": PNG decode failed");
  width = int(image.width);
  height = int(image.height);
  if (alpha) {
    const size_t pixels = size_t(width) * size_t(height), in = size_t(channels) + 1;
    for (size_t i = 0; i < pixels; ++i)
      std::memmove(out.data() + i * size_t(channels), out.data() + i * in, size_t(channels));
    out.resize(pixels * size_t(channels));
  }
  return out;
}

std::vector<uint8_t> read_png(const std::string& path, int& width, int& height, int& channels) {
  return decode_png(read_file(path), path, width, height, channels);
}

}  // namespace vispec
