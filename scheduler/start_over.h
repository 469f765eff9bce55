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

}  // namespace vispec
