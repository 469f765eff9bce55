// `vispec run --new`: OUT's previous run removed, and only what a run wrote there (io/run_layout.h names it),
// so that a directory of someone's own files is never emptied by a mistyped --out.
//
// It is one step as far as any later run can tell: OUT/.vispec-new is written before the first removal and
// removed after the last, and the journal goes first. A run that finds the mark (a --new killed halfway)
// finishes the removal before it writes anything, so old images never stand beside a new job's.
#pragma once

#include <string>

namespace vispec {

// Throws one line, before removing anything, if OUT holds files but no vispec journal (nor the mark of a
// --new under way): nothing there is known to be vispec's.
void start_over(const std::string& out);
// Whether a --new was killed before it finished in OUT.
bool start_over_pending(const std::string& out);
// Before a run writes anything in OUT: OUT is vispec's to write, a run's (its journal, by content), a --new under
// way, or new (absent, or nothing in it but the lock and empty run directories). Else throws one line naming the
// first file that is not vispec's, `action` saying what would have happened ("a run would write").
void require_own_output(const std::string& out, const std::string& action);

}  // namespace vispec
