// The team of kernels/team.h on one CPU thread: each() runs the lanes one after another, so a body written for
// a CUDA block runs unchanged as its own CPU reference. top() sorts (kernels/sort_order.h's counting takes 64
// passes over the values, which a CPU thread would run one after another).
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "kernels/sort_order.h"
#include "kernels/team.h"

namespace vispec::kernels {

struct CpuTeam {
  double partial[team::kLanes], base[team::kLanes];
  int64_t counts[team::kLanes];
  template <class F>
  void each(const F& f) {
    for (int lane = 0; lane < team::kLanes; ++lane) f(lane);
  }
  template <class F>
  void one(const F& f) {
    f();
  }
  template <class F>
  void top(const double* v, int64_t n, int64_t top, bool /*ranks: a sort gives them anyway*/, const F& f) {
    order_.resize(size_t(n));
    std::iota(order_.begin(), order_.end(), int64_t(0));
    const int64_t first = std::clamp<int64_t>(top, 0, n);
    std::partial_sort(order_.begin(), order_.begin() + first, order_.end(), [&](int64_t a, int64_t b) {
      const uint64_t ka = order::key(v[a]), kb = order::key(v[b]);
      return ka > kb || (ka == kb && a < b);
    });
    for (int64_t r = 0; r < n; ++r) f(order_[size_t(r)], r < first ? r : -1);
  }

 private:
  std::vector<int64_t> order_;
};

// row(team, r) for every r < rows, rows spread over LibTorch's threads, a team each: how every CPU reference of
// a per-row body runs (a CUDA block per row on the GPU: kernels/block_team.cuh's launch_team_rows).
template <class Row>
void for_each_row_on_teams(int64_t rows, const Row& row) {
  at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    auto team = std::make_unique<CpuTeam>();
    for (int64_t r = r0; r < r1; ++r) row(*team, r);
  });
}

}  // namespace vispec::kernels
