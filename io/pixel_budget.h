// The most pixels an image file may declare: Pillow's decompression-bomb limit (twice its MAX_IMAGE_PIXELS of
// 89,478,485, where Pillow raises an error rather than warns). A 330-byte JPEG may claim 65500 x 65500 pixels;
// its header is checked against this before a byte of it is decoded or allocated.
#pragma once

#include <cstdint>
#include <string>

#include "core/check.h"

namespace vispec {

constexpr int64_t kMaxImagePixels = 2 * 89478485;

// One line naming `where` if width x height is over max_pixels (a tool's smaller budget: the fuzz targets').
inline void check_pixel_budget(const std::string& where, int64_t width, int64_t height,
                               int64_t max_pixels = kMaxImagePixels) {
  VISPEC_CHECK(width * height <= max_pixels, where, ": declares ", width, "x", height, " = ", width * height,
               " pixels, more than the ", max_pixels, " an image may have",
               max_pixels == kMaxImagePixels ? " (Pillow's decompression-bomb limit)" : "");
}

}  // namespace vispec
