// EAGLE-2's grown trees laid out for their verification, for one row (decoding/common/draft_tree.h: the rerank of
// grow_dynamic_trees' candidates and grown_tree_tables), written once for the CPU reference
// (kernels/tree_layout.cpp) and the CUDA kernel (kernels/tree_layout.cu) as a body for a team of lanes
// (kernels/team.h). It only compares and counts, so both backends give the composite formulas' outputs exactly.
//
// The candidates of a row, C = K + D K^2 of them in level order (level 0: the root's K children; then K^2 per
// level, K consecutive under each frontier node, best first):
//   rerank    a candidate is kept when its score is finite and fewer than `nodes` candidates come before it in
//             torch.sort's stable descending order (NaN first, ties by index: the team's top()); then, level by level,
//             one whose parent was not kept is dropped (it lost a tie at the cut: a node without its path is
//             unverifiable)
//   number    a kept candidate is node 1 + the kept candidates before it (the root is node 0), so nodes stay in
//             candidate order and parents precede children; the rest are padding (token 0, depth 0, itself as
//             parent)
//   lay out   each node's token, depth and raster position (root_index + depth, at most cells - 1); the
//             ancestor mask (a node attends itself and its ancestors); each node's children, slot j the j-th
//             kept candidate of its K-block, -1 in the unused slots
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "kernels/sort_order.h"
#include "kernels/team.h"

namespace vispec::kernels::layout {

// Raw pointers to contiguous row-major memory, B rows.
struct Args {
  const double* score = nullptr;        // [B, C] each candidate's summed log-prob
  const int64_t* parent = nullptr;      // [B, C] its parent's candidate index, -1 under the root
  const int64_t* token = nullptr;       // [B, C]
  const int64_t* nodes = nullptr;       // [B] candidates a row keeps at most (its total_tokens - 1)
  const int64_t* roots = nullptr;       // [B] each row's root token
  const int64_t* root_index = nullptr;  // [B] its raster index
  int64_t C = 0, K = 1, D = 0, T = 1, cells = 1;
  bool* keep = nullptr;            // [B, C]
  int64_t* node_of = nullptr;      // [B, C] scratch: a kept candidate's node
  int64_t* node_parent = nullptr;  // [B, T] scratch: each node's parent node (padding and the root: itself)
  int64_t* tok = nullptr;          // [B, T]
  int64_t* depth = nullptr;        // [B, T]
  int64_t* pos = nullptr;          // [B, T]
  bool* mask = nullptr;            // [B, T, T]
  int64_t* children = nullptr;     // [B, T, K]
};

// A candidate's depth from its index alone: level 0's K are depth 1, then K^2 per level.
VISPEC_HD int64_t candidate_depth(int64_t c, int64_t K) { return c < K ? 1 : (c - K) / (K * K) + 2; }

template <class Team>
VISPEC_HD void lay_out_row(Team& t, const Args& a, int64_t b) {
  const int64_t C = a.C, K = a.K, T = a.T, n = a.nodes[b];
  const double* score = a.score + b * C;
  const int64_t* parent = a.parent + b * C;
  const int64_t* token = a.token + b * C;
  bool* keep = a.keep + b * C;
  int64_t* node_of = a.node_of + b * C;
  int64_t* node_parent = a.node_parent + b * T;
  int64_t *tok = a.tok + b * T, *depth = a.depth + b * T, *pos = a.pos + b * T, *children = a.children + b * T * K;
  bool* mask = a.mask + b * T * T;

  // Rerank: the first n in the sort's order, if finite.
  t.top(score, C, n, /*ranks=*/false,
        [&](int64_t c, int64_t rank) { keep[c] = rank >= 0 && order::is_finite(score[c]); });
  for (int64_t level = 1, start = K; level <= a.D; start += K * K, ++level)
    t.each([&](int lane) {
      const auto ch = team::chunk_of(lane, K * K);
      for (int64_t c = start + ch.lo; c < start + ch.hi; ++c) keep[c] = keep[c] && keep[parent[c]];
    });

  // Number the kept candidates: each lane counts its chunk, one lane turns the counts into the chunks' starts.
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, C);
    int64_t kept = 0;
    for (int64_t c = ch.lo; c < ch.hi; ++c) kept += keep[c] ? 1 : 0;
    t.counts[lane] = kept;
  });
  team::counts_to_starts(t);
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, C);
    int64_t run = t.counts[lane];
    for (int64_t c = ch.lo; c < ch.hi; ++c) node_of[c] = keep[c] ? ++run : T;
  });

  // Lay out: the root and the padding first, then every kept candidate writes its own node (a node < T: a
  // caller's T below 1 + nodes loses the excess rather than writing out of bounds).
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, T);
    for (int64_t i = ch.lo; i < ch.hi; ++i) {
      tok[i] = i == 0 ? a.roots[b] : 0;
      depth[i] = 0;
      node_parent[i] = i;
      for (int64_t s = 0; s < K; ++s) children[i * K + s] = -1;
    }
  });
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, C);
    for (int64_t c = ch.lo; c < ch.hi; ++c) {
      const int64_t node = node_of[c];
      if (!keep[c] || node >= T) continue;
      const int64_t up = parent[c] < 0 ? 0 : node_of[parent[c]];
      tok[node] = token[c];
      depth[node] = candidate_depth(c, K);
      node_parent[node] = up;
      int64_t slot = 0;  // the kept candidates before c in its K-block
      for (int64_t o = c - c % K; o < c; ++o) slot += keep[o] ? 1 : 0;
      children[up * K + slot] = node;
    }
  });
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, T);
    for (int64_t i = ch.lo; i < ch.hi; ++i) {
      const int64_t at = a.root_index[b] + depth[i];
      pos[i] = at < a.cells - 1 ? at : a.cells - 1;
      bool* row = mask + i * T;
      for (int64_t j = 0; j < T; ++j) row[j] = false;
      row[i] = true;
      for (int64_t hop = 0, up = i; hop <= a.D; ++hop) {  // a node is at most D + 1 below the root
        up = node_parent[up];
        row[up] = true;
      }
    }
  });
}

}  // namespace vispec::kernels::layout
