// PNG writing (libpng), atomically. Deterministic bytes: no timestamps or text chunks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/file_digest.h"
#include "io/pixel_budget.h"

namespace vispec {

// pixels: height * width * channels bytes, row-major, channels 1 (gray) or 3 (RGB).
std::string encode_png(const std::vector<uint8_t>& pixels, int width, int height, int channels);
FileDigest write_png(const std::string& path, const std::vector<uint8_t>& pixels, int width, int height, int channels,
                     bool sync_directory = true);
// Decodes a PNG (for tests, tools and training images): fills width/height/channels (1: gray, 3: RGB; any alpha
// dropped, any bit depth or palette made 8-bit). decode_png takes the file's bytes, and `where` names them in its
// errors (an archive member). An image that declares more than max_pixels is refused before it is decoded
// (io/pixel_budget.h).
std::vector<uint8_t> read_png(const std::string& path, int& width, int& height, int& channels);
std::vector<uint8_t> decode_png(const std::string& bytes, const std::string& where, int& width, int& height,
                                int& channels, int64_t max_pixels = kMaxImagePixels);

}  // namespace vispec
