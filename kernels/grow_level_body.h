// EAGLE-2's trees as they grow on the device, one level at a time, for one row (decoding/common/draft_tree.h's
// grow_dynamic_trees), written once for the CPU reference (kernels/grow_level.cpp) and the CUDA kernel
// (kernels/tree_layout.cu) as a body for a team of lanes (kernels/team.h). One float64 addition per candidate,
// the rest compares and copies: both backends give the composite formulas' outputs exactly.
//
// The growth lives in buffers made once per tree (W = K (D + 1) frontier slots, C = K + D K^2 candidates):
//   cand_token, cand_parent, cand_score [B, C]  every candidate in level order (level 0: the root's K children,
//                                                then K^2 per level, K consecutive under each frontier node)
//   frontier, tokens, parent_slot [B, W]         the frontier nodes of every level so far: their candidate
//                                                index, token and parent's frontier slot (-1: the root)
//   mask [B, W, W]                               their ancestry (a node sees itself and its ancestors)
//   score [B, K]                                 the newest frontier's summed log-probs
// The root (level -1) starts them from its top-K log-probs and tokens; level l >= 0 scores the K^2 children of
// level l's frontier (the drafter's top-K log-probs lp and tokens idx under each), -inf where the row is already
// as deep as its tree, under a frontier node past its top_k (from level 1 on: the extras stay candidates but
// are not expanded) or past its top_k among the children; the next frontier is the K best children in
// torch.sort's stable descending order (NaN first, ties by index: kernels/sort_order.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "kernels/team.h"

namespace vispec::kernels::growth {

// Raw pointers to contiguous row-major memory, B rows.
template <typename P>
struct Args {
  const P* lp = nullptr;         // [B, K] at the root, [B, K, K] at a level: the drafter's top-K log-probs
  const int64_t* idx = nullptr;  // the same shape: their tokens
  const int64_t* own = nullptr;  // [B, 3] each row's top_k, depth and nodes
  double* score = nullptr;
  int64_t *cand_token = nullptr, *cand_parent = nullptr;
  double* cand_score = nullptr;
  int64_t *frontier = nullptr, *tokens = nullptr, *parent_slot = nullptr;
  bool* mask = nullptr;
  int64_t K = 1, C = 1, W = 1, level = -1;
};

template <class Team, typename P>
VISPEC_HD void grow_row(Team& t, const Args<P>& a, int64_t b) {
  const int64_t K = a.K, W = a.W, level = a.level;
  const int64_t own_k = a.own[b * 3], own_depth = a.own[b * 3 + 1];
  const double none = -double(INFINITY);
  double* score = a.score + b * K;
  int64_t *cand_token = a.cand_token + b * a.C, *cand_parent = a.cand_parent + b * a.C;
  double* cand_score = a.cand_score + b * a.C;
  int64_t *frontier = a.frontier + b * W, *tokens = a.tokens + b * W, *parent_slot = a.parent_slot + b * W;
  bool* mask = a.mask + b * W * W;
  if (level < 0) {  // the root's K children: every one a frontier node, those past the row's top_k at -inf
    const P* lp = a.lp + b * K;
    const int64_t* idx = a.idx + b * K;
    t.each([&](int lane) {
      const auto ch = team::chunk_of(lane, K);
      for (int64_t c = ch.lo; c < ch.hi; ++c) {
        const double s = c >= own_k ? none : double(lp[c]);
        cand_token[c] = tokens[c] = idx[c];
        cand_parent[c] = parent_slot[c] = -1;
        cand_score[c] = score[c] = s;
        frontier[c] = c;
      }
    });
    t.each([&](int lane) {
      const auto ch = team::chunk_of(lane, W * W);
      for (int64_t e = ch.lo; e < ch.hi; ++e) mask[e] = e / W == e % W && e / W < K;
    });
    return;
  }
  const int64_t M = K * (level + 1), off = K + level * K * K, KK = K * K;
  const P* lp = a.lp + b * KK;
  const int64_t* idx = a.idx + b * KK;
  // Score the K^2 children (i: the frontier node, j: the child's rank under it).
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, KK);
    for (int64_t e = ch.lo; e < ch.hi; ++e) {
      const int64_t i = e / K, j = e % K;
      const bool dead = own_depth <= level || (level > 0 && i >= own_k) || j >= own_k;
      cand_score[off + e] = dead ? none : hd::add(double(lp[e]), score[i]);
      cand_token[off + e] = idx[e];
      cand_parent[off + e] = frontier[M - K + i];
    }
  });
  // The K best in the sort's order (the team's top()): a child of rank r is the next frontier's slot r.
  const double* flat = cand_score + off;
  t.top(flat, KK, K, /*ranks=*/true, [&](int64_t e, int64_t r) {
    if (r < 0) return;
    frontier[M + r] = off + e;
    tokens[M + r] = idx[e];
    parent_slot[M + r] = e / K + M - K;
    score[r] = flat[e];
  });
  // A new node's ancestry: its parent's, and itself (the columns past M + K, and those of earlier rows past M,
  // stay as the root's step made them: false).
  t.each([&](int lane) {
    const int64_t width = M + K;
    const auto ch = team::chunk_of(lane, K * width);
    for (int64_t e = ch.lo; e < ch.hi; ++e) {
      const int64_t r = e / width, c = e % width, slot = parent_slot[M + r];
      mask[(M + r) * W + c] = c < M ? mask[slot * W + c] : c == M + r;
    }
  });
}

}  // namespace vispec::kernels::growth
