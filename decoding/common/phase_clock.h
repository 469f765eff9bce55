// Time by phase of a decode (draft, verify, resample, bookkeeping, a method's own), charged to the rows that
// took part. On the CPU a phase's time is the wall clock between two marks. On a GPU the host only queues
// kernels and, once a decode loop stops waiting for the device, runs ahead of it: a wall-clock lap would charge
// a phase with the time the host spent queueing, and the next read would absorb everything. So there each mark
// is a CUDA event on the current stream, and the times are the device's between two events, read once, when
// the decode has finished (settle(): its last read has already waited for the device).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "decoding/common/decoder.h"

namespace vispec {

// A phase: the interval between the mark before it and its own end mark.
struct Lap {
  int64_t end = -1;  // -1: no such phase
};

class PhaseClock {
 public:
  explicit PhaseClock(torch::Device device);  // marks the start
  ~PhaseClock();
  PhaseClock(PhaseClock&&) noexcept;
  PhaseClock& operator=(PhaseClock&&) noexcept;

  void restart();  // a new phase starts now (what came since the last mark is not charged)
  Lap lap();       // the phase since the last mark ends now

  // At settle(): lap's milliseconds, split equally, added to `field` (or to extra[key]) of each of `rows` (0
  // for a Lap that never ended: a phase that did not run still names its entry).
  void charge(Lap lap, const std::vector<int64_t>& rows, double SampleStats::*field);
  void charge(Lap lap, const std::vector<int64_t>& rows, const std::string& extra_key);
  // Applies every charge (on a GPU after the last mark's event has completed) and forgets them.
  void settle(std::vector<SampleStats>& stats);

 private:
  struct Marks;  // wall-clock time points, or CUDA events
  struct Charge {
    Lap lap;
    std::vector<int64_t> rows;
    double SampleStats::*field = nullptr;
    std::string extra_key;
  };
  std::unique_ptr<Marks> marks_;
  std::vector<Charge> charges_;
};

}  // namespace vispec
