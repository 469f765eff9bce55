#include "io/jpeg.h"

#include <csetjmp>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared before it.
#include <jpeglib.h>
#include <jerror.h>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/pixel_budget.h"

namespace vispec {

namespace {
// libjpeg reports a fatal error by calling error_exit, which must not return: it jumps back to decode() (no C++
// object with a destructor lives between the setjmp and the jump), which then throws.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool over_budget = false;  // the header declares more pixels than an image may have (io/pixel_budget.h)
};

void error_exit(j_common_ptr info) {
  auto* err = reinterpret_cast<ErrorManager*>(info->err);
  (*info->err->format_message)(info, err->message);
  std::longjmp(err->jump, 1);
}

// A truncated file is only a warning to libjpeg, which fills the missing rows with gray; Pillow refuses it
// ("image file is truncated"), and so does this. Its other warnings (corrupt bytes it skips, as in a few of
// ImageNet's files, which Pillow reads) are read past, as Pillow does.
void emit_message(j_common_ptr info, int level) {
  if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) error_exit(info);
}

// A fill of `out` (sized by the caller from the header) or false with err.message set; C-style on purpose.
bool decode(const std::string& bytes, int64_t max_pixels, ErrorManager& err, std::vector<uint8_t>& out, int& width,
            int& height, int& channels, bool& cmyk) {
  jpeg_decompress_struct info;
  info.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = error_exit;
  err.pub.emit_message = emit_message;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  // What the header declares, before libjpeg allocates for it (a progressive file's coefficients: 2 bytes per
  // sample of the whole image) or this fills it.
  if (int64_t(info.image_width) * int64_t(info.image_height) > max_pixels) {
    width = int(info.image_width), height = int(info.image_height);
    err.over_budget = true;
    jpeg_destroy_decompress(&info);
    return false;
  }
  cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
  info.out_color_space = cmyk ? JCS_CMYK : info.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  width = int(info.output_width);
  height = int(info.output_height);
  channels = info.output_components;
  out.resize(size_t(width) * size_t(height) * size_t(channels));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = out.data() + size_t(info.output_scanline) * size_t(width) * size_t(channels);
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

// PIL's MULDIV255: a * b / 255 rounded as it rounds.
inline uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return uint8_t((t + (t >> 8)) >> 8);
}
}  // namespace

std::vector<uint8_t> read_jpeg(const std::string& path, int& width, int& height, int& channels) {
  return decode_jpeg(read_file(path), path, width, height, channels);
}

std::vector<uint8_t> decode_jpeg(const std::string& bytes, const std::string& where, int& width, int& height,
                                 int& channels, int64_t max_pixels) {
  ErrorManager err{};
  std::vector<uint8_t> out;
  bool cmyk = false;
  const bool decoded = decode(bytes, max_pixels, err, out, width, height, channels, cmyk);
  if (err.over_budget) check_pixel_budget(where, width, height, max_pixels);
  VISPEC_CHECK(decoded, where, ": not a readable JPEG (libjpeg: ", err.message, ")");
  if (!cmyk) return out;
  const size_t pixels = size_t(width) * size_t(height);
  std::vector<uint8_t> rgb(pixels * 3);
  // PIL reads every CMYK JPEG as Adobe's inverted ink (0 = full), then R = (255 - K) - C (255 - K) / 255.
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t* p = out.data() + 4 * i;
    const int nk = p[3];  // 255 - K, K = 255 - stored
    for (int c = 0; c < 3; ++c) rgb[3 * i + size_t(c)] = uint8_t(nk - muldiv255(255 - p[c], nk));
  }
  channels = 3;
  return rgb;
}

}  // namespace vispec
