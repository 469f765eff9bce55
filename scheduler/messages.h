// The coordinator's two messages, as JSON text (MPI carries them as chars; rank 0's own worker passes them
// in memory). A worker sends a report (tag kReport) whenever it wants work — carrying the unit it just
// finished, a stop notice or its error — and blocks for the answer (tag kAssign): a unit, or stop.
#pragma once

#include <optional>
#include <string>

#include "workers/worker.h"

namespace vispec {

inline constexpr int kTagReport = 1;
inline constexpr int kTagAssign = 2;

std::string encode_report(const WorkerReport& report);
WorkerReport decode_report(const std::string& text);
std::string encode_assignment(const std::optional<WorkUnit>& unit);
std::optional<WorkUnit> decode_assignment(const std::string& text);

}  // namespace vispec
