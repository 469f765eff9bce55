#include "decoding/common/static_tree.h"

#include <algorithm>
#include <map>

#include "core/check.h"

namespace vispec {

namespace {
using Paths = std::vector<std::vector<int64_t>>;

// LANTERN's public code's tree of child ranks (docs/algorithms.md, "EAGLE-1 static trees, LANTERN++ and Cool-SD").
const Paths kNaiveExtend57 = {{0},
                              {1},
                              {2},
                              {3},
                              {4},
                              {0, 0},
                              {0, 1},
                              {0, 2},
                              {0, 3},
                              {1, 0},
                              {1, 1},
                              {1, 2},
                              {2, 0},
                              {2, 1},
                              {2, 2},
                              {3, 0},
                              {3, 1},
                              {4, 0},
                              {0, 0, 0},
                              {0, 0, 1},
                              {0, 0, 2},
                              {0, 0, 3},
                              {0, 1, 0},
                              {0, 1, 1},
                              {0, 1, 2},
                              {0, 2, 0},
                              {0, 2, 1},
                              {0, 2, 2},
                              {0, 3, 0},
                              {0, 3, 1},
                              {1, 0, 0},
                              {1, 0, 1},
                              {1, 1, 0},
                              {2, 0, 0},
                              {0, 0, 0, 0},
                              {0, 0, 0, 1},
                              {0, 0, 0, 2},
                              {0, 0, 0, 3},
                              {0, 0, 1, 0},
                              {0, 0, 1, 1},
                              {0, 0, 1, 2},
                              {0, 0, 2, 0},
                              {0, 0, 2, 1},
                              {0, 0, 3, 0},
                              {0, 1, 0, 0},
                              {0, 1, 0, 1},
                              {0, 1, 1, 0},
                              {0, 2, 0, 0},
                              {0, 0, 0, 0, 0},
                              {0, 0, 0, 0, 1},
                              {0, 0, 0, 0, 2},
                              {0, 0, 0, 1, 0},
                              {0, 0, 0, 1, 1},
                              {0, 0, 1, 0, 0},
                              {0, 0, 1, 0, 1},
                              {0, 0, 1, 1, 0},
                              {0, 0, 2, 0, 0}};
const Paths kMcSim7b63 = {{0},
                          {1},
                          {2},
                          {3},
                          {0, 0},
                          {0, 1},
                          {0, 2},
                          {1, 0},
                          {1, 1},
                          {2, 0},
                          {2, 1},
                          {3, 0},
                          {0, 0, 0},
                          {0, 0, 1},
                          {0, 0, 2},
                          {0, 1, 0},
                          {0, 1, 1},
                          {0, 2, 0},
                          {0, 2, 1},
                          {1, 0, 0},
                          {0, 0, 0, 0},
                          {0, 0, 0, 1},
                          {0, 0, 0, 2},
                          {0, 0, 0, 0, 0},
                          {0, 0, 0, 0, 1}};

std::string show(const std::vector<int64_t>& path) {
  std::string s = "[";
  for (size_t i = 0; i < path.size(); ++i) s += (i ? "," : "") + std::to_string(path[i]);
  return s + "]";
}
}  // namespace

int64_t StaticTree::max_depth() const { return depth.empty() ? 0 : *std::max_element(depth.begin(), depth.end()); }

StaticTree static_tree_from_paths(const Paths& paths) {
  StaticTree t;
  t.parent = {-1};
  t.rank = {0};
  t.depth = {0};
  std::map<std::vector<int64_t>, int64_t> index{{{}, 0}};
  for (const auto& path : paths) {
    VISPEC_CHECK(!path.empty() && !index.count(path), "static tree: path ", show(path), " is empty or repeated");
    const std::vector<int64_t> up(path.begin(), path.end() - 1);
    VISPEC_CHECK(index.count(up), "static tree: path ", show(path), " comes before its parent ", show(up));
    const int64_t node = t.size(), parent = index[up];
    index[path] = node;
    t.parent.push_back(parent);
    t.rank.push_back(path.back());
    t.depth.push_back(int64_t(path.size()));
  }
  t.draws.assign(size_t(t.size()), 0);
  std::vector<std::vector<int64_t>> ranks(size_t(t.size()));
  for (int64_t i = 1; i < t.size(); ++i) ranks[size_t(t.parent[size_t(i)])].push_back(t.rank[size_t(i)]);
  for (int64_t i = 0; i < t.size(); ++i) {
    auto r = ranks[size_t(i)];
    std::sort(r.begin(), r.end());
    for (size_t j = 0; j < r.size(); ++j)
      VISPEC_CHECK(r[j] == int64_t(j), "static tree: the children of node ", i,
                   " skip a rank (children are draws without replacement: ranks 0 .. n-1)");
    t.draws[size_t(i)] = int64_t(r.size());
  }
  return t;
}

std::vector<std::string> static_tree_names() { return {"naive_extend_57", "mc_sim_7b_63", "chain_N"}; }

StaticTree named_static_tree(const std::string& name) {
  if (name == "naive_extend_57") return static_tree_from_paths(kNaiveExtend57);
  if (name == "mc_sim_7b_63") return static_tree_from_paths(kMcSim7b63);
  if (name.rfind("chain_", 0) == 0) {
    const auto n = std::strtol(name.c_str() + 6, nullptr, 10);
    VISPEC_CHECK(n >= 1 && n <= 64 && name == "chain_" + std::to_string(n), "unknown static tree '", name,
                 "' (chain_N takes N in [1, 64])");
    Paths chain;
    for (long i = 1; i <= n; ++i) chain.push_back(std::vector<int64_t>(size_t(i), 0));
    return static_tree_from_paths(chain);
  }
  VISPEC_FAIL("unknown static tree '", name, "' (known: naive_extend_57, mc_sim_7b_63, chain_N)");
}

}  // namespace vispec
