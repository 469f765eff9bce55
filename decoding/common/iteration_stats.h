// What every speculative decoder records per iteration besides its algorithm: time by phase (draft, verify,
// resample, bookkeeping: decoding/common/phase_clock.h), shared equally by the rows still decoding, and one forward
// of each model.
#pragma once

#include <vector>

#include "decoding/common/decode_state.h"
#include "decoding/common/decoder.h"
#include "decoding/common/phase_clock.h"

namespace vispec {

struct IterationTimes {
  Lap draft, verify, resample, bookkeeping;  // `times.draft = clock.lap();` at each phase's end
  // False where the iteration's device half may be replayed as one graph (decoding/common/iteration_graphs.h):
  // an event inside a graph is not one the host can time, so its phases are not timed apart.
  bool timed = true;
  // The end of a phase inside the device half (nothing where it is not timed apart).
  void end(Lap& phase, PhaseClock& clock) const {
    if (timed) phase = clock.lap();
  }
  // The end of the device half, its read done: the resample, or where not timed apart the whole half, charged
  // to verify.
  void end_device_half(PhaseClock& clock) { (timed ? resample : verify) = clock.lap(); }
  // An iteration's times from now (the clock restarted); `replayed`: its device half may be replayed as one
  // graph (IterationGraphs::replays), so its phases are not timed apart.
  static IterationTimes start(PhaseClock& clock, bool replayed) {
    clock.restart();
    IterationTimes t;
    t.timed = !replayed;
    return t;
  }
};

// One target forward (or `target_forwards`) and `draft_forwards` drafter forwards for the sample of every
// active row now, and its share of the phases' times when the clock settles.
inline void charge_iteration(PhaseClock& clock, DecodeState& rows, const std::vector<int64_t>& active,
                             const IterationTimes& t, int64_t draft_forwards, int64_t target_forwards = 1) {
  for (int64_t b : active) {
    auto& s = rows.stats_of(b);
    s.target_forwards += target_forwards;
    s.draft_forwards += draft_forwards;
  }
  const auto samples = rows.samples_of(active);
  clock.charge(t.draft, samples, &SampleStats::draft_ms);
  clock.charge(t.verify, samples, &SampleStats::verify_ms);
  clock.charge(t.resample, samples, &SampleStats::resample_ms);
  clock.charge(t.bookkeeping, samples, &SampleStats::bookkeeping_ms);
}

// Every row of a batch of B: 0 .. B - 1 (the prefill's rows, a decoder whose rows advance together).
inline std::vector<int64_t> all_rows(int64_t B) {
  std::vector<int64_t> rows(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) rows[size_t(b)] = b;
  return rows;
}

}  // namespace vispec
