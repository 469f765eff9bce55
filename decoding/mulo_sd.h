// MuLo-SD (paper 000): multi-scale drafting with local verification. This header holds the pieces written so
// far; the decoder (Algorithm 1) follows in decoding/mulo_sd.cpp.
#pragma once

#include <cstdint>
#include <vector>

namespace vispec {

// The locally expanded rejection set R_X (paper 000, Eq. 6-7): every cell u of the drafted span
// [span_begin, span_end) (raster indices on a grid `width` cells wide) within Chebyshev distance `radius` of a
// rejected cell t (|row_u - row_t| <= l and |col_u - col_t| <= l), and never before the first rejection t0
// (u >= t0). `rejected` need not be sorted; the result is sorted ascending (the order they are resampled in).
std::vector<int64_t> local_expansion(const std::vector<int64_t>& rejected, int64_t width, int64_t radius,
                                     int64_t span_begin, int64_t span_end);

}  // namespace vispec
