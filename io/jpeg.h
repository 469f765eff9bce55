// JPEG decoding (libjpeg-turbo), for training images: ImageNet's folders are JPEG files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/pixel_budget.h"

namespace vispec {

// Decodes a baseline or progressive JPEG: height * width * channels bytes, row-major, channels 1 (gray) or 3
// (RGB, from YCbCr, RGB or CMYK/YCCK as PIL's convert("RGB") makes it: the ink read as Adobe's inverted values,
// as PIL reads every CMYK JPEG, then R = (255 - C)(255 - K) / 255). Anything libjpeg cannot read is an Error
// naming `path`.
std::vector<uint8_t> read_jpeg(const std::string& path, int& width, int& height, int& channels);
// The same from the file's bytes, `where` naming them in errors; an image that declares more than max_pixels, or
// ends early (as Pillow: "image file is truncated"), is refused (io/pixel_budget.h).
std::vector<uint8_t> decode_jpeg(const std::string& bytes, const std::string& where, int& width, int& height,
                                 int& channels, int64_t max_pixels = kMaxImagePixels);

}  // namespace vispec
