#include "decoding/common/phase_clock.h"

#ifdef VISPEC_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

#include "core/check.h"

namespace vispec {

struct PhaseClock::Marks {
  using Clock = std::chrono::steady_clock;
  bool cuda = false;
  torch::Device device{torch::kCPU};
  std::vector<Clock::time_point> wall;
#ifdef VISPEC_CUDA
  std::vector<at::cuda::CUDAEvent> events;
#endif

  void mark() {
#ifdef VISPEC_CUDA
    if (cuda) {
      events.emplace_back(cudaEventDefault);  // timing enabled
      events.back().record(at::cuda::getCurrentCUDAStream(device.index()));
      return;
    }
#endif
    wall.push_back(Clock::now());
  }
  int64_t count() const {
#ifdef VISPEC_CUDA
    if (cuda) return int64_t(events.size());
#endif
    return int64_t(wall.size());
  }
  // Milliseconds between mark i - 1 and mark i.
  double ms(int64_t i) const {
#ifdef VISPEC_CUDA
    if (cuda) return double(events[size_t(i - 1)].elapsed_time(events[size_t(i)]));
#endif
    return std::chrono::duration<double, std::milli>(wall[size_t(i)] - wall[size_t(i - 1)]).count();
  }
  void wait_for_last() {
#ifdef VISPEC_CUDA
    if (cuda && !events.empty()) events.back().synchronize();
#endif
  }
};

PhaseClock::PhaseClock(torch::Device device) : marks_(std::make_unique<Marks>()) {
  marks_->cuda = device.is_cuda();
  marks_->device = device;
  marks_->mark();
}

PhaseClock::~PhaseClock() = default;
PhaseClock::PhaseClock(PhaseClock&&) noexcept = default;
PhaseClock& PhaseClock::operator=(PhaseClock&&) noexcept = default;

void PhaseClock::restart() { marks_->mark(); }

Lap PhaseClock::lap() {
  marks_->mark();
  return {marks_->count() - 1};
}

void PhaseClock::charge(Lap lap, const std::vector<int64_t>& rows, double SampleStats::*field) {
  if (!rows.empty()) charges_.push_back({lap, rows, field, ""});
}

void PhaseClock::charge(Lap lap, const std::vector<int64_t>& rows, const std::string& extra_key) {
  if (!rows.empty()) charges_.push_back({lap, rows, nullptr, extra_key});  // a phase that did not run: 0
}

void PhaseClock::settle(std::vector<SampleStats>& stats) {
  marks_->wait_for_last();
  for (const auto& c : charges_) {
    const double share = c.lap.end > 0 ? marks_->ms(c.lap.end) / double(c.rows.size()) : 0.0;
    for (int64_t b : c.rows) {
      auto& s = stats[size_t(b)];
      if (c.field) s.*c.field += share;
      else s.extra[c.extra_key] += share;
    }
  }
  charges_.clear();
}

}  // namespace vispec
