// Clean stops: SIGTERM (Slurm's time limit, scancel), SIGUSR1 (Slurm's --signal warning before the limit, and
// what mpirun forwards to every rank) and SIGINT set a flag that the unit loop reads between batches (and a decode loop
// between iterations). The job then abandons the unit in hand, flushes its journal and exits with kExitInterrupted
// (apps/exit_codes.h), which a requeue script tests for; a rerun resumes.
#pragma once

namespace vispec {

void install_stop_handlers();
bool stop_requested();
int stop_signal_number();  // the signal that asked, 0 if none
void request_stop();       // the same, from code (e.g. a coordinator telling its local worker)

}  // namespace vispec
