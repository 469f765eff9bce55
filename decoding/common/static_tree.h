// Static draft trees (EAGLE-1, LANTERN++, Cool-SD): a fixed list of paths of child ranks. {0, 1} is the
// second-drawn child of the first-drawn child of the root; children are drawn from the drafter without
// replacement, so the ranks under a node must be 0 .. n-1 (a prefix of the draws).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

struct StaticTree {
  // Node 0 is the root; nodes follow in the order of the paths, so parents precede children.
  std::vector<int64_t> parent, rank, depth;
  std::vector<int64_t> draws;  // children drawn at each node (its largest child rank + 1; 0 for a leaf)

  int64_t size() const { return int64_t(parent.size()); }
  int64_t max_depth() const;
};

// Builds a tree from rank paths sorted by length (as LANTERN's choices.py lists them); throws a one-line
// error on a path whose parent is not listed before it or a node whose ranks skip one.
StaticTree static_tree_from_paths(const std::vector<std::vector<int64_t>>& paths);
// The named trees: naive_extend_57 (LANTERN++'s LlamaGen default, 57 nodes, depth 5), mc_sim_7b_63 (25
// nodes, EAGLE-1's and LANTERN's Lumina default), chain_N (one path of N drafts).
StaticTree named_static_tree(const std::string& name);
std::vector<std::string> static_tree_names();

}  // namespace vispec
