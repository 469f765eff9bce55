#include "io/pil_resize.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace vispec {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's: 8 bits of result, 2 for the bicubic's overshoot

double box_weight(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

double bicubic_weight(double x) {  // Keys' cubic convolution with a = -0.5
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// One pass's weights: output index o reads inputs first[o] .. first[o] + count[o] - 1 with weights
// weight[o * taps ...], in fixed point.
struct PassWeights {
  int taps = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weight;
};

PassWeights pass_weights(int in_size, int out_size, PilFilter filter) {
  const double scale = double(in_size) / out_size;  // Pillow: (in1 - in0) / outSize, a box of the whole image
  const double filter_scale = std::max(scale, 1.0);
  const double support = (filter == PilFilter::kBox ? 0.5 : 2.0) * filter_scale;
  PassWeights p;
  p.taps = int(std::ceil(support)) * 2 + 1;
  p.first.resize(size_t(out_size));
  p.count.resize(size_t(out_size));
  p.weight.assign(size_t(out_size) * size_t(p.taps), 0);
  std::vector<double> w(size_t(p.taps));
  const double shrink = 1.0 / filter_scale;  // Pillow multiplies by the reciprocal (the last bit can differ)
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    // Pillow's rounding: a conversion to int (towards zero) of the value plus one half, then clamped.
    const int lo = std::max(0, int(center - support + 0.5));
    const int count = std::min(in_size, int(center + support + 0.5)) - lo;
    double total = 0.0;
    std::fill(w.begin(), w.end(), 0.0);
    for (int i = 0; i < count; ++i) {
      const double x = (i + lo - center + 0.5) * shrink;
      w[size_t(i)] = filter == PilFilter::kBox ? box_weight(x) : bicubic_weight(x);
      total += w[size_t(i)];
    }
    for (int i = 0; i < count; ++i)
      if (total != 0.0) w[size_t(i)] /= total;
    for (int i = 0; i < p.taps; ++i) {  // to fixed point, rounding half away from zero
      const double v = w[size_t(i)] * (1 << kPrecisionBits);
      p.weight[size_t(o) * size_t(p.taps) + size_t(i)] = int32_t(v < 0 ? -0.5 + v : 0.5 + v);
    }
    p.first[size_t(o)] = lo;
    p.count[size_t(o)] = count;
  }
  return p;
}

// A weighted sum in fixed point, started at one half, back to 8 bits (an arithmetic shift, then clamped).
uint8_t to_8_bits(int64_t sum) { return uint8_t(std::clamp<int64_t>(sum >> kPrecisionBits, 0, 255)); }

// Resamples along one axis: `lines` lines of in_length pixels to lines of out_length, the lines being the rows
// (horizontal) or the columns of a row-major image of `channels` values per pixel.
std::vector<uint8_t> resample_axis(const std::vector<uint8_t>& in, int in_length, int out_length, int lines,
                                   int channels, bool horizontal, PilFilter filter) {
  const auto p = pass_weights(in_length, out_length, filter);
  std::vector<uint8_t> out(size_t(out_length) * size_t(lines) * size_t(channels));
  for (int line = 0; line < lines; ++line)
    for (int o = 0; o < out_length; ++o) {
      const int32_t* k = &p.weight[size_t(o) * size_t(p.taps)];
      for (int c = 0; c < channels; ++c) {
        int64_t sum = int64_t(1) << (kPrecisionBits - 1);
        for (int i = 0; i < p.count[size_t(o)]; ++i) {
          const int at = p.first[size_t(o)] + i;
          const size_t pixel =
              horizontal ? size_t(line) * size_t(in_length) + size_t(at) : size_t(at) * size_t(lines) + size_t(line);
          sum += int64_t(in[pixel * size_t(channels) + size_t(c)]) * k[i];
        }
        const size_t pixel =
            horizontal ? size_t(line) * size_t(out_length) + size_t(o) : size_t(o) * size_t(lines) + size_t(line);
        out[pixel * size_t(channels) + size_t(c)] = to_8_bits(sum);
      }
    }
  return out;
}

}  // namespace

std::vector<uint8_t> pil_resize(const std::vector<uint8_t>& pixels, int width, int height, int channels, int out_width,
                                int out_height, PilFilter filter) {
  VISPEC_ASSERT(width > 0 && height > 0 && out_width > 0 && out_height > 0 && channels > 0 &&
                    pixels.size() == size_t(width) * size_t(height) * size_t(channels),
                "pil_resize: ", width, "x", height, "x", channels, " from ", pixels.size(), " values to ", out_width,
                "x", out_height);
  // Horizontal first, over every row (Pillow passes only the rows the vertical pass reads: the same values).
  auto image = out_width == width ? pixels : resample_axis(pixels, width, out_width, height, channels, true, filter);
  if (out_height != height) image = resample_axis(image, height, out_height, out_width, channels, false, filter);
  return image;
}

}  // namespace vispec
