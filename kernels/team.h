// A team of kLanes lanes, the way a per-row kernel body is written once for both backends
// (kernels/tree_walk_body.h, kernels/tree_layout_body.h): on a GPU the lanes are a CUDA block's threads
// (kernels/block_team.cuh), on the CPU one thread plays each lane in turn (kernels/cpu_team.h). A team offers
//
//   each(f)   f(lane) for every lane; afterwards every lane sees what any wrote
//   one(f)    f() once; afterwards every lane sees what it wrote
//   partial, base [kLanes] double and counts [kLanes] int64: scratch the lanes share
//   top(v, n, top, ranks, f)  f(c, rank) for every c < n: c's place in torch.sort's stable descending order of
//             the float64 values v[0..n) if below `top`, else -1; with ranks false any rank >= 0 may stand for
//             "among the first top" (kernels/sort_order.h)
//
// and lanes share out a pass over n entries in contiguous chunks (chunk_of), so that a sum adds each chunk left
// to right, then the chunks' sums left to right, in an order fixed whoever runs it.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace vispec::kernels::team {

constexpr int kLanes = 256;

// Lane `lane`'s chunk of n entries: [lo, hi), lane i owning [i ch, (i + 1) ch), ch = ceil(n / kLanes).
struct Chunk {
  int64_t lo, hi;
};
VISPEC_HD Chunk chunk_of(int lane, int64_t n) {
  const int64_t size = (n + kLanes - 1) / kLanes;
  const int64_t lo = lane * size < n ? lane * size : n;
  return {lo, lo + size < n ? lo + size : n};
}

// Turns each lane's count in t.counts into the sum of the counts of the lanes before it: where each lane's chunk
// starts in a numbering of what the lanes counted. One lane adds; every lane sees the result.
template <class Team>
VISPEC_HD void counts_to_starts(Team& t) {
  t.one([&] {
    int64_t run = 0;
    for (int lane = 0; lane < kLanes; ++lane) {
      const int64_t count = t.counts[lane];
      t.counts[lane] = run;
      run += count;
    }
  });
}

}  // namespace vispec::kernels::team
