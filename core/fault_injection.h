// Failure injection for the crash-and-resume tests: the environment variable VISPEC_FAULT=<point>@<unit>
// makes the process fail at a named point of the unit loop, the way a real failure would:
//   kill-mid-unit@U   SIGKILL after half of unit U's images are written (a crash during a unit's writes)
//   kill-at-unit@U    SIGKILL as unit U starts (a rank dying mid-job)
//   enospc@U          unit U's writes fail with "No space left on device" (a full disk)
//   slow@MS           every batch takes MS milliseconds longer (so a test can signal a job mid-run)
//   bad-alloc@R       rank R runs out of memory (std::bad_alloc) just after planning
//   coordinator-throws@U   rank 0's coordinator fails (std::runtime_error) as unit U is reported
//   fs-error@U        the worker decoding unit U meets a std::filesystem error
//   json-error@U      the worker decoding unit U meets a JSON parse error
//   kill-at-step@S    a trainer SIGKILLs itself as step S starts (after the checkpoints before it)
//   kill-in-checkpoint@S   a trainer SIGKILLs itself with step S's checkpoint files written, before they are
//                     put in place
//   train-error@S     a trainer's step S fails (std::runtime_error), as a rank's failure mid-training
//   driver-too-old@0  device auto meets GPUs whose NVIDIA driver is too old for this build (core/device.h)
// Unset (always, in production), every check is one integer comparison.
#pragma once

#include <cstdint>
#include <string>

namespace vispec {

// True when VISPEC_FAULT names this point and unit.
bool fault_at(const std::string& point, int64_t unit);
// SIGKILLs this process when VISPEC_FAULT names this point and unit.
void maybe_kill_at(const std::string& point, int64_t unit);
// The number after '@' when VISPEC_FAULT names this point, else -1.
int64_t fault_value(const std::string& point);

}  // namespace vispec
