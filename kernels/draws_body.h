// EAGLE-1's draws without replacement (decoding/eagle1.h's draw_without_replacement) for one row of q, written
// once for the CPU reference (kernels/draws.cpp) and the CUDA kernel (kernels/draws.cu) as a body for a
// team of lanes (kernels/team.h): draw j is the inverse-CDF draw with uniform u_j from q without the earlier
// draws, its probability the drawn mass over what was left (0 once nothing is left). Sums and running sums are
// the tree walk's (kernels/tree_walk_body.h: chunk by chunk, then over the chunks, in float64), so both backends
// give the same bits; the composite formula's ATen sums may round otherwise (kernel_set() names this).
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "kernels/team.h"
#include "kernels/tree_walk_body.h"

namespace vispec::kernels::draws {

// Raw pointers to contiguous row-major memory, R rows of V codes, n draws each.
template <typename P>
struct Args {
  const P* q = nullptr;       // [R, V] probabilities (need not be normalised)
  const double* u = nullptr;  // [R, n]
  double* left = nullptr;     // [R, V] scratch: q less the draws so far
  int64_t* tokens = nullptr;  // [R, n]
  double* probs = nullptr;    // [R, n]
  int64_t V = 1, n = 0;
};

template <class Team, typename P>
VISPEC_HD void draw_row(Team& t, const Args<P>& a, int64_t row) {
  const int64_t V = a.V, n = a.n;
  const P* q = a.q + row * V;
  double* left = a.left + row * V;
  t.each([&](int lane) {
    const auto ch = team::chunk_of(lane, V);
    for (int64_t i = ch.lo; i < ch.hi; ++i) left[i] = double(q[i]);
  });
  const auto mass = [&](int64_t i) { return left[i]; };
  for (int64_t j = 0; j < n; ++j) {
    const double total = walk::team_sum(t, V, mass);
    const auto below = walk::count_running_sums(t, V, mass, hd::mul(a.u[row * n + j], total));
    const int64_t idx = below.count < V - 1 ? below.count : V - 1;  // the first whose running sum exceeds u total
    t.one([&] {
      a.tokens[row * n + j] = idx;
      a.probs[row * n + j] = total > 0 ? hd::div(left[idx], total) : 0.0;
      left[idx] = 0.0;
    });
  }
}

}  // namespace vispec::kernels::draws
