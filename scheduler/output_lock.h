// One writer per output directory. Rank 0 holds an advisory lock (flock) on OUT/.vispec.lock for the job's
// life, taken before it changes anything in OUT; the kernel releases it when the process ends, however it
// ends, so a crashed run never leaves a stale lock. A second run into the same directory fails at once with
// one line naming the holder (host, pid, start time), which the holder writes into the file.
// File systems: local ones and NFS (v4, or v3 with lockd: Linux turns flock into a whole-file lock that every
// client sees) exclude runs on every machine. Lustre does only when mounted with -o flock; with -o localflock
// only runs on the same node are excluded, and without either flock fails: vispec then warns and runs unlocked.
#pragma once

#include <string>

namespace vispec {

// A reader of a finished run (export) takes the same lock shared: readers go together, and a writer excludes
// them, and they it. A reader writes nothing: no lock file (a run directory copied without one) is no lock.
class OutputLock {
 public:
  enum class Mode { kWriter, kReader };
  // A writer creates OUT if needed; either throws Error if the other kind holds it.
  explicit OutputLock(const std::string& out_dir, Mode mode = Mode::kWriter);
  ~OutputLock();  // releases the lock
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace vispec
