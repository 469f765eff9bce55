#include "decoding/adt_tree.h"

#include <algorithm>

namespace vispec {

TreeShape adapt_tree_shape(const TreeShape& prev, int64_t accepted, const AdtParams& p) {
  TreeShape s = prev;
  const double alpha = prev.depth > 0 ? double(accepted) / double(prev.depth) : 1.0;
  const int64_t sign = alpha >= p.beta ? 1 : -1;
  s.depth = std::clamp(prev.depth + sign * p.step_depth, p.min_depth, p.max_depth);
  s.top_k = std::clamp(prev.top_k - sign * p.step_k, p.min_k, p.max_k);
  return s;
}

TreeShape AdtPolicy::next(int64_t root) const {
  const int64_t row = root / grid_, col = root % grid_;
  // Latest tree first: the left neighbour if it is in this row, else the tree above (the latest tree of the
  // row above rooted at or left of this column).
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    const int64_t r = it->root / grid_, c = it->root % grid_;
    if (r == row || (r == row - 1 && c <= col)) return adapt_tree_shape(it->shape, it->accepted, params_);
    if (r < row - 1) break;
  }
  return initial_;
}

void AdtPolicy::record(int64_t root, const TreeShape& shape, int64_t accepted) {
  history_.push_back({root, shape, accepted});
}

}  // namespace vispec
