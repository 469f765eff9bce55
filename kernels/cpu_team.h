// The team of kernels/team.h on one CPU thread: each() runs the lanes one after another, so a body written for
// a CUDA block runs unchanged as its own CPU reference.
#pragma once

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
};

}  // namespace vispec::kernels
