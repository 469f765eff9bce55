// Rank 0's main thread during a job: hands out units on request, journals finished ones, shows progress, and
// drains the job on a stop signal or a worker's error. Dynamic schedule: the lowest pending unit goes to
// whichever rank asks, so a fast GPU or an easy prompt never idles the rest. Static: unit i goes to rank
// i mod N (same outputs; a fallback for debugging or when requests must be avoided).
// The progress line (every 5 s) counts the batches of the units in hand, which the workers report as they
// write them: images this run, images/s, the ETA, and with several ranks the slowest and fastest rank.
#pragma once

#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include "scheduler/journal.h"
#include "scheduler/mpi_session.h"
#include "scheduler/unit_sources.h"
#include "workers/job_plan.h"

namespace vispec {

struct RankTally {
  int64_t units = 0, images = 0;
  double busy_seconds = 0, wait_seconds = 0;
  ModelLoad load;  // from the rank's first report
};

struct CoordinatorOutcome {
  int exit_code = 0;  // core/exit_codes.h
  std::string error;  // the first worker or journal error, one line
  bool interrupted = false;
  double wall_seconds = 0;
  std::vector<RankTally> ranks;
  int64_t units_total = 0, units_done_before = 0;
};

class Coordinator {
 public:
  Coordinator(const MpiSession& session, LocalChannel& local, const JobPlan& plan, Journal& journal);
  CoordinatorOutcome run();

 private:
  std::optional<WorkUnit> handle(int source, const WorkerReport& report);
  std::optional<WorkUnit> next_unit(int rank);
  void log_progress(bool force);

  const MpiSession& session_;
  LocalChannel& local_;
  const JobPlan& plan_;
  Journal& journal_;
  std::vector<std::deque<int64_t>> pending_;  // one queue (dynamic) or one per rank (static)
  CoordinatorOutcome out_;
  int finished_ranks_ = 0;
  int64_t images_this_run_ = 0, units_this_run_ = 0, images_done_before_ = 0;
  std::vector<int64_t> in_flight_;  // per rank: images of its unit in hand written so far (kTagProgress)
  std::chrono::steady_clock::time_point start_, last_log_;
};

}  // namespace vispec
