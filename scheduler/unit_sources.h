// The two ways a worker reaches the coordinator: over MPI (ranks 1..N-1), and in memory (rank 0's own worker
// thread, so that rank 0 decodes too while its main thread keeps answering requests).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "scheduler/mpi_session.h"
#include "workers/worker.h"

namespace vispec {

class MpiUnitSource : public UnitSource {
 public:
  explicit MpiUnitSource(const MpiSession& session) : session_(session) {}
  std::optional<WorkUnit> next(const WorkerReport& report) override;
  void progress(int64_t images) override;

 private:
  const MpiSession& session_;
};

// A one-slot mailbox between rank 0's worker thread (next) and the coordinator (take, answer).
class LocalChannel : public UnitSource {
 public:
  std::optional<WorkUnit> next(const WorkerReport& report) override;  // worker: post, wait for the answer
  void progress(int64_t images) override;                             // worker: a batch written
  std::optional<WorkerReport> take();                                 // coordinator: a waiting report, if any
  void answer(const std::optional<WorkUnit>& unit);                   // coordinator: reply to the taken one
  int64_t in_flight() const { return in_flight_; }  // coordinator: images of the unit in hand written so far

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<WorkerReport> report_;
  bool taken_ = false, answered_ = false;
  std::optional<WorkUnit> answer_;
  std::atomic<int64_t> in_flight_{0};  // zeroed when the unit's report is taken
};

}  // namespace vispec
