// `vispec run` (under mpirun/srun or alone): plan on every rank, prepare OUT and the journal on rank 0, then
// rank 0 coordinates in its main thread and decodes in a second one while ranks 1..N-1 decode; at the end
// rank 0 merges the units' metrics and writes the summary. Returns the exit code (core/exit_codes.h), the same
// on every rank.
#pragma once

#include <string>
#include <vector>

namespace vispec {

struct RunOptions {
  std::string job_file;
  std::string out_dir;                 // overrides the job's `out` when non-empty
  std::vector<std::string> overrides;  // --set key=value
  bool start_over = false;             // --new: discard the journal and the outputs in OUT
  bool resume = false;                 // vispec resume: job_file must be a run's output directory
};

int run_job(const RunOptions& options);

}  // namespace vispec
