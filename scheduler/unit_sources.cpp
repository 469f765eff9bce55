#include "scheduler/unit_sources.h"

#include "scheduler/messages.h"

namespace vispec {

std::optional<WorkUnit> MpiUnitSource::next(const WorkerReport& report) {
  session_.send(0, kTagReport, encode_report(report));
  return decode_assignment(session_.recv(0, kTagAssign));
}

void MpiUnitSource::progress(int64_t images) { session_.send(0, kTagProgress, std::to_string(images)); }

void LocalChannel::progress(int64_t images) { in_flight_ += images; }

std::optional<WorkUnit> LocalChannel::next(const WorkerReport& report) {
  std::unique_lock<std::mutex> lock(mutex_);
  report_ = report;
  taken_ = answered_ = false;
  cv_.wait(lock, [this] { return answered_; });
  report_.reset();
  return answer_;
}

std::optional<WorkerReport> LocalChannel::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!report_ || taken_) return std::nullopt;
  taken_ = true;
  in_flight_ = 0;  // the report ends the unit in hand: done (its images counted with it) or abandoned
  return report_;
}

void LocalChannel::answer(const std::optional<WorkUnit>& unit) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    answer_ = unit;
    answered_ = true;
  }
  cv_.notify_all();
}

}  // namespace vispec
