#include "decoding/mulo_sd.h"

#include <algorithm>
#include <set>

namespace vispec {

std::vector<int64_t> local_expansion(const std::vector<int64_t>& rejected, int64_t width, int64_t radius,
                                     int64_t span_begin, int64_t span_end) {
  if (rejected.empty()) return {};
  const int64_t t0 = *std::min_element(rejected.begin(), rejected.end());
  std::set<int64_t> cells;
  for (int64_t t : rejected) {
    const int64_t row = t / width, col = t % width;
    for (int64_t r = row - radius; r <= row + radius; ++r)
      for (int64_t c = std::max<int64_t>(0, col - radius); c <= std::min(width - 1, col + radius); ++c) {
        const int64_t u = r * width + c;
        if (r >= 0 && u >= t0 && u >= span_begin && u < span_end) cells.insert(u);
      }
  }
  return {cells.begin(), cells.end()};
}

}  // namespace vispec
