// The tree walk of the verification unit (decoding/common/verify.h's verify_tree and verify_tree_greedy) for one row,
// written once for the CPU reference (kernels/tree_walk.cpp) and the CUDA kernel (kernels/tree_walk.cu):
// the same function body, so the same bits, on both.
//
// The body is written for a team of team::kLanes lanes (kernels/team.h: a CUDA block's threads, or one CPU
// thread playing each lane in turn), every pass over the vocabulary shared out in the team's chunks and every
// reduction added chunk by chunk, then over the chunks, so its order is fixed whoever runs it.
//
// Everything else (the walk's own state: node, accepted, live, ...) every lane computes alike from what all
// see. The arithmetic is float64 through core/host_device.h's hd:: operations (one rounding each, no fused
// multiply-adds on either side).
//
// What the walk computes is documented at verify_tree in decoding/common/verify.h; the acceptance rules at
// decoding/common/acceptance.h. Sums and cumulative sums are added in this file's order, not the composite
// operators', so a token may differ from the composite walk's where a uniform falls within a rounding of a
// boundary: kernel_set() names this arithmetic.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "kernels/team.h"

namespace vispec::kernels::walk {

using team::chunk_of;
using team::kLanes;

// decoding/common/acceptance_params.h's AcceptRule, in its order.
enum Rule : int { kExact = 0, kLantern = 1, kLanternPlusPlus = 2, kCoolSd = 3 };

// One walk's inputs, outputs and scratch: raw pointers to contiguous row-major memory (B rows).
template <typename P>
struct Args {
  const P* p = nullptr;                 // [B, T, V] the target's processed distributions (sampling walks)
  const int64_t* target = nullptr;      // [B, T] the target's argmax at every node (greedy walks; p is null)
  const int64_t* token = nullptr;       // [B, T] each node's token
  const int64_t* depth = nullptr;       // [B, T] each node's depth
  const int64_t* children = nullptr;    // [B, T, C] each node's children in slot order, -1 unused
  const P* node_q = nullptr;            // [B, S, V] the drafter's q at the expanded nodes (EAGLE-1), or null
  const int64_t* q_slot = nullptr;      // [B, T] each node's row of node_q, -1 for leaves
  const int64_t* neighbours = nullptr;  // [codes, nn_cols] nearest codes first (LANTERN rules)
  int64_t codes = 0;
  const double* weights = nullptr;     // [B, w_cols] Cool-SD's w at depth 1 .. w_cols of each row's length
  const int64_t* limit = nullptr;      // [B] drafts a row may still accept
  const double* u_accept = nullptr;    // [B, L, C]
  const double* u_resample = nullptr;  // [B, L + 1]
  const double* u_sample = nullptr;    // [B, L + 1]
  int64_t T = 0, C = 0, S = 0, V = 0, L = 0, nn_cols = 0, w_cols = 0;
  int rule = kExact;
  int64_t k = 0;  // LANTERN rules' neighbours considered (at most nn_cols)
  double delta = 0, lambda = 1;
  bool optimal = false;
  double* pc = nullptr;      // scratch [B, V]: p at the node, less what its rejected children took
  double* q_left = nullptr;  // scratch [B, V]: the node's q, less its rejected children (node_q only)
  double* alt = nullptr;     // scratch [B, V]: a rule's modified p or q
  int64_t* path = nullptr;   // [B, L + 2] the accepted nodes, root first, -1 after the last
  int64_t* accepted = nullptr;
  int64_t* next = nullptr;
  bool* sampled = nullptr;
  int64_t* tried = nullptr;  // [B] each
};

VISPEC_HD double positive_part(double d) { return d > 0 ? d : 0.0; }

// sum_i value(i) over i < n, in the fixed order (chunks, then their sums).
template <class Team, class F>
VISPEC_HD double team_sum(Team& t, int64_t n, const F& value) {
  t.each([&](int lane) {
    const auto c = chunk_of(lane, n);
    double s = 0;
    for (int64_t i = c.lo; i < c.hi; ++i) s = hd::add(s, value(i));
    t.partial[lane] = s;
  });
  double total = 0;
  for (int lane = 0; lane < kLanes; ++lane) total = hd::add(total, t.partial[lane]);
  return total;
}

// The running sums of value(i), i < n, in team_sum's order (cdf_i = the sums of the chunks before i's, plus
// i's chunk up to i: never decreasing for non-negative values): how many are at most `bound`, and the last of
// those (0 if none). t.partial must hold the chunks' sums (team_sum just ran over the same values).
struct CountBelow {
  int64_t count;
  double last;
};
template <class Team, class F>
VISPEC_HD CountBelow count_running_sums(Team& t, int64_t n, const F& value, double bound) {
  t.one([&] {
    double b = 0;
    for (int lane = 0; lane < kLanes; ++lane) {
      t.base[lane] = b;
      b = hd::add(b, t.partial[lane]);
    }
  });
  t.each([&](int lane) {
    const auto c = chunk_of(lane, n);
    double run = 0, last = 0;
    int64_t count = 0;
    for (int64_t i = c.lo; i < c.hi; ++i) {
      run = hd::add(run, value(i));
      const double cdf = hd::add(t.base[lane], run);
      if (cdf <= bound) ++count, last = cdf;
    }
    t.counts[lane] = count;
    t.partial[lane] = last;
  });
  CountBelow out{0, 0.0};
  for (int lane = 0; lane < kLanes; ++lane) {  // the sums within the bound are a prefix: the last lane holding any
    out.count += t.counts[lane];
    if (t.counts[lane] > 0) out.last = t.partial[lane];
  }
  return out;
}

// Inverse-CDF sampling of dist(i), i < V (need not be normalised) with the uniform u: the first i whose
// running sum exceeds u times the total (decoding/common/sampler.h's sample_from_probs, in this order).
template <class Team, class F>
VISPEC_HD int64_t team_sample(Team& t, int64_t V, const F& dist, double u) {
  const double total = team_sum(t, V, dist);
  const auto below = count_running_sums(t, V, dist, hd::mul(u, total));
  return below.count < V - 1 ? below.count : V - 1;
}

// pc := norm(max(0, a - q)), or a / sum(a) where that is all zero (acceptance.h's residuals). a(i) and q(i)
// may read pc at i: each entry is read before it is written, by the lane that owns it.
template <class Team, class A, class Q>
VISPEC_HD void residual_into(Team& t, double* pc, int64_t V, const A& a, const Q& q) {
  const double r_total = team_sum(t, V, [&](int64_t i) { return positive_part(hd::sub(a(i), q(i))); });
  const double a_total = r_total > 0 ? 1.0 : team_sum(t, V, a);
  t.each([&](int lane) {
    const auto c = chunk_of(lane, V);
    for (int64_t i = c.lo; i < c.hi; ++i)
      pc[i] = r_total > 0 ? hd::div(positive_part(hd::sub(a(i), q(i))), r_total) : hd::div(a(i), a_total);
  });
}

// LANTERN's aggregation at x over pc: p~(x) = pc(x) + the largest prefix sum of its neighbours' masses within
// the budget, and how many neighbours that folds in (acceptance.h's relaxed_masses).
struct Relaxed {
  double p_tilde;
  int64_t aggregated;
};
template <class Team, typename P>
VISPEC_HD Relaxed relaxed_mass(Team& t, const Args<P>& a, const double* pc, int64_t x, double budget) {
  const int64_t* near = a.neighbours + x * a.nn_cols;
  const auto mass = [&](int64_t j) { return near[j] >= 0 && near[j] < a.V ? pc[near[j]] : 0.0; };
  team_sum(t, a.k, mass);
  const auto below = count_running_sums(t, a.k, mass, budget);
  return {hd::add(pc[x], below.count > 0 ? below.last : 0.0), below.count};
}

// The walk's per-row state, the same on every lane, and its record of how each level ended.
struct RowWalk {
  int64_t node = 0, accepted = 0, tried = 0, next = 0, limit = 0;
  bool sampled = false, live = false;

  // A level's outcome: accepting `chosen` moves on to it (until the limit); else the walk ends with `token`.
  // Returns the path entry of the level.
  VISPEC_HD int64_t step(bool found, int64_t chosen, int64_t token) {
    if (!found) {
      next = token, sampled = true, live = false;
      return -1;
    }
    ++accepted;
    node = chosen;
    live = accepted < limit;
    return chosen;
  }
};

// Row b's walk at its root (live while it may accept a draft), its path cleared to the root alone.
template <class Team, typename P>
VISPEC_HD RowWalk start_row(Team& t, const Args<P>& a, int64_t b) {
  RowWalk w;
  w.limit = a.limit[b];
  w.live = w.limit > 0;
  int64_t* path = a.path + b * (a.L + 2);
  t.one([&] {
    path[0] = 0;
    for (int64_t l = 1; l < a.L + 2; ++l) path[l] = -1;
  });
  return w;
}

template <class Team, typename P>
VISPEC_HD void finish_row(Team& t, const Args<P>& a, int64_t b, const RowWalk& w) {
  t.one([&] { a.accepted[b] = w.accepted, a.next[b] = w.next, a.sampled[b] = w.sampled, a.tried[b] = w.tried; });
}

// Cool-SD's w at a draft depth of row b (depth 1 first; the table repeats its last weight past the length).
template <typename P>
VISPEC_HD double cool_weight(const Args<P>& a, int64_t b, int64_t depth) {
  const int64_t j = depth - 1 < 0 ? 0 : depth - 1 < a.w_cols ? depth - 1 : a.w_cols - 1;
  return a.weights[b * a.w_cols + j];
}

// Temperature 0: a child is accepted where it is the target's argmax at its parent (Cool-SD: with probability
// min(1, w_depth)); the walk ends on the argmax.
template <class Team, typename P>
VISPEC_HD void walk_greedy_row(Team& t, const Args<P>& a, int64_t b) {
  RowWalk w = start_row(t, a, b);
  int64_t* path = a.path + b * (a.L + 2);
  for (int64_t l = 0; l <= a.L && w.live; ++l) {
    const int64_t want = a.target[b * a.T + w.node];
    bool found = false;
    int64_t chosen = w.node;
    if (l < a.L) {
      const int64_t* kids = a.children + (b * a.T + w.node) * a.C;
      int64_t slot = -1, children = 0, up_to_slot = 0;
      for (int64_t c = 0; c < a.C; ++c) {
        if (kids[c] < 0 || kids[c] >= a.T) continue;
        ++children;
        if (slot < 0) ++up_to_slot;
        if (slot < 0 && a.token[b * a.T + kids[c]] == want) slot = c;
      }
      if (slot >= 0) {
        found = true, chosen = kids[slot];
        if (a.rule == kCoolSd) {  // a weight below 1 accepts the match only by chance
          const double wd = cool_weight(a, b, a.depth[b * a.T + chosen]);
          found = a.u_accept[(b * a.L + l) * a.C + slot] < (wd < 1.0 ? wd : 1.0);
        }
      }
      w.tried += found ? up_to_slot : children;  // children tested: up to the accepted one, else all
    }
    const int64_t entry = w.step(found, chosen, want);
    t.one([&] { path[l + 1] = entry; });
  }
  finish_row(t, a, b, w);
}

// The sampling walk of row b (verify_tree): at the node its children in slot order; child x is accepted with
// the rule's probability against q^ (node_q: the node's q without the rejected siblings, renormalised;
// otherwise one-hot at x); a rejection turns pc into the rule's rejection distribution; when no child is
// accepted, or at a leaf, the next token is sampled from pc.
template <class Team, typename P>
VISPEC_HD void walk_sampling_row(Team& t, const Args<P>& a, int64_t b) {
  const int64_t V = a.V;
  double* pc = a.pc + b * V;
  double* q_left = a.q_left ? a.q_left + b * V : nullptr;
  double* alt = a.alt ? a.alt + b * V : nullptr;
  const bool has_q = a.node_q != nullptr;
  RowWalk w = start_row(t, a, b);
  int64_t* path = a.path + b * (a.L + 2);
  for (int64_t l = 0; l <= a.L && w.live; ++l) {
    const P* p_node = a.p + (b * a.T + w.node) * V;
    const int64_t q_row = has_q ? a.q_slot[b * a.T + w.node] : 0;
    const P* q_node = has_q ? a.node_q + (b * a.S + (q_row < 0 || q_row >= a.S ? 0 : q_row)) * V : nullptr;
    t.each([&](int lane) {
      const auto c = chunk_of(lane, V);
      for (int64_t i = c.lo; i < c.hi; ++i) {
        pc[i] = double(p_node[i]);
        if (has_q) q_left[i] = double(q_node[i]);
      }
    });
    bool found = false, has_children = false;
    int64_t chosen = w.node;
    const int64_t* kids = a.children + (b * a.T + w.node) * a.C;
    const bool near_table = a.rule == kLantern || a.rule == kLanternPlusPlus;
    for (int64_t c = 0; l < a.L && c < a.C && !found; ++c) {
      const int64_t child = kids[c];
      if (child < 0 || child >= a.T) continue;  // (the tables come from vispec; never read outside them)
      const int64_t x = a.token[b * a.T + child], depth = a.depth[b * a.T + child];
      if (x < 0 || x >= V || (near_table && x >= a.codes)) continue;
      has_children = true;
      const double q_sum = has_q ? team_sum(t, V, [&](int64_t i) { return q_left[i]; }) : 1.0;
      const double q_norm = q_sum > 2.2250738585072014e-308 ? q_sum : 2.2250738585072014e-308;
      const auto q_hat = [&](int64_t i) { return has_q ? hd::div(q_left[i], q_norm) : (i == x ? 1.0 : 0.0); };
      const double qx = q_hat(x);
      double px = pc[x], w_depth = 1.0;
      Relaxed relaxed{0, 0};
      if (a.rule == kCoolSd) {
        w_depth = cool_weight(a, b, depth);
        px = hd::mul(pc[x], w_depth);
      } else if (a.rule == kLantern || a.rule == kLanternPlusPlus) {
        const double budget = a.rule == kLantern ? a.delta : hd::mul(hd::sub(a.lambda, 1.0), pc[x]);
        relaxed = relaxed_mass(t, a, pc, x, budget);
        px = relaxed.p_tilde;
      }
      // q(x) = 0: a draft q never proposes x; only reachable through rounding.
      const double ratio = qx > 0 ? hd::div(px, qx) : (px > 0 ? 1.0 : 0.0);
      const double prob = ratio < 1.0 ? ratio : 1.0;
      ++w.tried;
      if (a.u_accept[(b * a.L + l) * a.C + c] < prob) {
        found = true, chosen = child;
        break;
      }
      // Rejected: pc becomes the rule's rejection distribution (acceptance.h's rejection_distributions).
      const auto own = [&](int64_t i) { return pc[i]; };
      const int64_t* near = a.neighbours ? a.neighbours + x * a.nn_cols : nullptr;
      if (a.rule == kCoolSd) {
        residual_into(t, pc, V, own, [&](int64_t i) {
          const double q = q_hat(i), wp = hd::mul(w_depth, pc[i]);
          return q < wp ? q : wp;
        });
      } else if (a.rule == kExact || a.optimal) {
        residual_into(t, pc, V, own, q_hat);
      } else if (a.rule == kLantern) {  // x and the neighbours folded into it leave the target first
        t.each([&](int lane) {
          const auto c = chunk_of(lane, V);
          for (int64_t i = c.lo; i < c.hi; ++i) alt[i] = pc[i];
        });
        t.one([&] {
          alt[x] = 0;
          for (int64_t j = 0; j < relaxed.aggregated; ++j)
            if (near[j] >= 0 && near[j] < V) alt[near[j]] = 0;
        });
        const double kept = team_sum(t, V, [&](int64_t i) { return alt[i]; });
        const double scale = kept > 1e-300 ? kept : 1e-300;
        if (kept > 0)
          residual_into(
              t, pc, V, [&](int64_t i) { return hd::div(alt[i], scale); }, q_hat);
        else residual_into(t, pc, V, own, q_hat);
      } else {  // LANTERN++: the aggregated neighbours keep their target mass: q without them
        t.each([&](int lane) {
          const auto c = chunk_of(lane, V);
          for (int64_t i = c.lo; i < c.hi; ++i) alt[i] = q_hat(i);
        });
        t.one([&] {
          for (int64_t j = 0; j < relaxed.aggregated; ++j)
            if (near[j] >= 0 && near[j] < V) alt[near[j]] = 0;
        });
        residual_into(t, pc, V, own, [&](int64_t i) { return alt[i]; });
      }
      if (has_q) t.one([&] { q_left[x] = 0; });  // the next sibling was drawn without this one
    }
    int64_t token = 0;
    if (!found) {  // every child rejected (pc is the rejection distribution), or a leaf (pc is p): sample
      const double u = has_children ? a.u_resample[b * (a.L + 1) + l] : a.u_sample[b * (a.L + 1) + l];
      token = team_sample(
          t, V, [&](int64_t i) { return pc[i]; }, u);
    }
    const int64_t entry = w.step(found, chosen, token);
    t.one([&] { path[l + 1] = entry; });
  }
  finish_row(t, a, b, w);
}

// Row b's walk: greedy where the target's argmax is given, else sampling.
template <class Team, typename P>
VISPEC_HD void walk_row(Team& t, const Args<P>& a, int64_t b) {
  if (a.target) walk_greedy_row(t, a, b);
  else walk_sampling_row(t, a, b);
}

}  // namespace vispec::kernels::walk
