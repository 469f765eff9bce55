// What every speculative decoder records per iteration besides its algorithm: wall time by phase (draft,
// verify, resample, bookkeeping), shared equally by the rows still decoding, and one forward of each model.
#pragma once

#include <chrono>
#include <vector>

#include "decoding/decoder.h"

namespace vispec {

struct IterationTimes {
  using Clock = std::chrono::steady_clock;
  double draft_ms = 0, verify_ms = 0, resample_ms = 0, bookkeeping_ms = 0;

  // Milliseconds since `start`, and restarts it: `times.draft_ms = times.lap(t);`.
  static double lap(Clock::time_point& start) {
    const auto now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - start).count();
    start = now;
    return ms;
  }
};

// One target forward (or `target_forwards`) and `draft_forwards` drafter forwards for every active row, and its
// share of the times.
inline void charge_iteration(std::vector<SampleStats>& stats, const std::vector<int64_t>& active,
                             const IterationTimes& t, int64_t draft_forwards, int64_t target_forwards = 1) {
  const double share = 1.0 / double(active.size());
  for (int64_t b : active) {
    auto& s = stats[size_t(b)];
    s.target_forwards += target_forwards;
    s.draft_forwards += draft_forwards;
    s.draft_ms += t.draft_ms * share;
    s.verify_ms += t.verify_ms * share;
    s.resample_ms += t.resample_ms * share;
    s.bookkeeping_ms += t.bookkeeping_ms * share;
  }
}

}  // namespace vispec
