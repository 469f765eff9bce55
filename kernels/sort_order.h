// torch.sort's stable descending order of float64 values (NaN first, then larger first, equal values by index),
// as the tree operators (kernels/tree_layout_body.h, kernels/grow_level_body.h) pick from their candidates, and
// the team's way to find the first `top` of n values in it without a sort (top_by_counting): what a CUDA block
// runs (kernels/block_team.cuh). A CPU team sorts instead (kernels/cpu_team.h); the two give the same ranks
// (TreeLayout.CountingTheTopEqualsSortingIt), so the CPU reference of a kernel may use either.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "kernels/team.h"

namespace vispec::kernels::order {

VISPEC_HD bool is_finite(double x) { return x - x == 0.0; }  // NaN and infinities give NaN

// A key whose unsigned order is the sort's order of values: larger values larger keys, every NaN the largest,
// -0 as +0 (equal as doubles, so ordered by index).
VISPEC_HD uint64_t key(double x) {
  if (x != x) return ~uint64_t(0);
  const uint64_t bits = hd::bits_of(x == 0.0 ? 0.0 : x);
  return bits >> 63 ? ~bits : bits | (uint64_t(1) << 63);
}

// How many of v[0..n) have a key of at least `k`: each lane counts its chunk, then every lane adds the counts.
template <class Team>
VISPEC_HD int64_t count_at_least(Team& t, const double* v, int64_t n, uint64_t k) {
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, n);
    int64_t count = 0;
    for (int64_t c = ch.lo; c < ch.hi; ++c) count += key(v[c]) >= k ? 1 : 0;
    t.counts[lane] = count;
  });
  int64_t total = 0;
  for (int lane = 0; lane < team::kLanes; ++lane) total += t.counts[lane];
  return total;
}

// f(c, rank) for every c < n, by the lane owning c: rank is c's place in the sort's order of v[0..n) if that is
// below `top`, else -1 (with ranks false: 0 for every one of the first `top`, their order not asked for). The key
// of the top-th value is found bit by bit (64 counting passes shared by the lanes); of the values with that very
// key only the first `quota` by index are in (the sort's ties); an in value's rank counts the values before it.
// Per lane 64 n / lanes steps, and with ranks n more per value in its chunk.
template <class Team, class F>
VISPEC_HD void top_by_counting(Team& t, const double* v, int64_t n, int64_t top, bool ranks, const F& f) {
  if (top > n) top = n;
  uint64_t cut = 0;  // the largest key with at least `top` values at or above it
  if (top > 0)
    for (int bit = 63; bit >= 0; --bit) {
      const uint64_t trial = cut | (uint64_t(1) << bit);
      if (count_at_least(t, v, n, trial) >= top) cut = trial;
    }
  const int64_t above = top <= 0 || cut == ~uint64_t(0) ? 0 : count_at_least(t, v, n, cut + 1);
  const int64_t quota = top - above;
  t.each([&](int lane) {  // the values at the cut in each lane's chunk
    const auto ch = team::chunk_of(lane, n);
    int64_t at = 0;
    for (int64_t c = ch.lo; c < ch.hi; ++c) at += key(v[c]) == cut ? 1 : 0;
    t.counts[lane] = at;
  });
  team::counts_to_starts(t);  // where each lane's values at the cut start
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, n);
    int64_t before = t.counts[lane];
    for (int64_t c = ch.lo; c < ch.hi; ++c) {
      const uint64_t k = key(v[c]);
      const bool in = top > 0 && (k > cut || (k == cut && before++ < quota));
      int64_t rank = in ? 0 : -1;
      if (in && ranks) {
        for (int64_t o = 0; o < n; ++o) {
          const uint64_t other = key(v[o]);
          rank += other > k || (other == k && o < c) ? 1 : 0;
        }
      }
      f(c, rank);
    }
  });
}

}  // namespace vispec::kernels::order
