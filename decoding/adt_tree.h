// ADT-Tree (its paper, section IV): a policy choosing EAGLE-2's tree shape per
// position from the trees drafted next to it. Only the shape changes: the builder, verification and
// acceptance rules are EAGLE-2's (decoding/eagle2.cpp), so ADT-Tree with any rule is lossless or relaxed
// exactly as that rule is.
//
//   start from the tree drafted at the left neighbour (the previous tree of this image row); for the first
//   tree of a row, the latest tree of the row above; else the configured shape.
//   alpha = accepted drafts of that tree / its depth
//   alpha >= beta: depth += step_depth, top_k -= step_k   (deeper, narrower)
//   otherwise:     depth -= step_depth, top_k += step_k   (shallower, wider); then clamp to the bounds
#pragma once

#include <cstdint>
#include <vector>

#include "decoding/common/draft_tree.h"

namespace vispec {

struct AdtParams {
  double beta = 1.0;
  int64_t step_depth = 1, step_k = 10;   // LlamaGen: l_d = 1, l_k = 10
  int64_t min_depth = 1, max_depth = 9;  // d in (0, 10)
  int64_t min_k = 4, max_k = 39;         // k in (3, 40)
};

// The rule itself: the next shape after a tree of shape `prev` that had `accepted` drafts accepted.
TreeShape adapt_tree_shape(const TreeShape& prev, int64_t accepted, const AdtParams& params);

// One sample's history of trees on a grid of `grid` columns.
class AdtPolicy {
 public:
  AdtPolicy(AdtParams params, TreeShape initial, int64_t grid) : params_(params), initial_(initial), grid_(grid) {}
  // The shape for a tree rooted at raster index `root` (call in raster order).
  TreeShape next(int64_t root) const;
  void record(int64_t root, const TreeShape& shape, int64_t accepted);

 private:
  struct Drafted {
    int64_t root;
    TreeShape shape;
    int64_t accepted;
  };
  AdtParams params_;
  TreeShape initial_;
  int64_t grid_;
  std::vector<Drafted> history_;
};

}  // namespace vispec
