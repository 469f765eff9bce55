#include "decoding/adt_tree.h"

#include <algorithm>
#include "decoding/eagle2.h"
#include "core/check.h"

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

namespace {
DecoderEntry adt_tree_entry() {
  auto e = eagle2_family_entry(
      "adt_tree", "ADT-Tree: EAGLE-2's trees, each one's depth and width adapted to its neighbours' acceptance",
      "exact");
  e.read = [tree = e.read](DecoderFields& f, DecoderConfig& c) {
    tree(f, c);
    AdtParams a;
    a.beta = f.number("beta", a.beta);
    a.step_depth = f.whole("step_depth", a.step_depth, 0, 32);
    a.step_k = f.whole("step_k", a.step_k, 0, 64);
    a.min_depth = f.whole("min_depth", a.min_depth, 0, 32);
    a.max_depth = f.whole("max_depth", a.max_depth, 0, 32);
    f.require(a.min_depth <= a.max_depth, "max_depth", "needs min_depth <= max_depth <= 32");
    a.min_k = f.whole("min_k", a.min_k, 1, 64);
    a.max_k = f.whole("max_k", a.max_k, 1, 64);
    f.require(a.min_k <= a.max_k, "max_k", "needs 1 <= min_k <= max_k <= 64");
    auto s = c.settings<Eagle2Settings>();
    s.adt = a;
    c.method = s;
  };
  e.check_model = [tree = e.check_model](const DecoderConfig& c, const ModelConfig& model) {
    tree(c, model);
    VISPEC_CHECK(c.settings<Eagle2Settings>().adt->max_k <= model.gpt.vocab_size, c.spec.where_of("max_k"),
                 ": larger than the vocabulary of ", model.file, " (", model.gpt.vocab_size, ")");
  };
  return e;
}
const DecoderRegistration kAdtTreeRegistration(adt_tree_entry());
}  // namespace

}  // namespace vispec
