// Pillow's Image.resize of an 8-bit image, bit for bit, for the two filters LlamaGen's center_crop_arr uses (BOX
// to halve, BICUBIC to reach the size), so that vispec tokenises a training folder into the tokens LlamaGen's own
// extraction gets from it. Pillow resamples in two separable passes, horizontal then vertical, each skipped where
// that side keeps its size. Per output pixel a pass takes the filter's weights over the input pixels in its
// support (the support scaled by the reduction: antialiasing), normalised to sum 1 and rounded to fixed point
// (22 fraction bits), and rounds its output to 8 bits: the intermediate image is 8-bit too, which is what a float
// resampler (LibTorch's antialiased bicubic) does not reproduce.
#pragma once

#include <cstdint>
#include <vector>

namespace vispec {

enum class PilFilter { kBox, kBicubic };

// pixels: `height` rows of `width` pixels of `channels` interleaved 8-bit values; returns the image resized to
// out_width x out_height in the same layout. Channels are resampled independently, as Pillow does.
std::vector<uint8_t> pil_resize(const std::vector<uint8_t>& pixels, int width, int height, int channels, int out_width,
                                int out_height, PilFilter filter);

}  // namespace vispec
