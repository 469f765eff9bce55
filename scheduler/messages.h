// The coordinator's messages, as text (MPI carries them as chars; rank 0's own worker passes them in memory).
// A worker sends a report (tag kReport) whenever it wants work — carrying the unit it just finished, a stop
// notice or its error — and blocks for the answer (tag kAssign): a unit, or stop. Between the two, after each
// batch of the unit in hand, it sends the batch's image count (tag kProgress, no answer): the progress line
// counts it before the unit is done. The coordinator receives a rank's messages in the order sent, so a
// rank's progress messages all arrive before its next report.
#pragma once

#include <optional>
#include <string>

#include "workers/worker.h"

namespace vispec {

inline constexpr int kTagReport = 1;
inline constexpr int kTagAssign = 2;
inline constexpr int kTagProgress = 3;

std::string encode_report(const WorkerReport& report);
WorkerReport decode_report(const std::string& text);
std::string encode_assignment(const std::optional<WorkUnit>& unit);
std::optional<WorkUnit> decode_assignment(const std::string& text);

}  // namespace vispec
