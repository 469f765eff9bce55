// OUT/metrics.jsonl: every journaled unit's per-sample lines (the unit's OUT/metrics/unit-<id>.jsonl), put
// together by rank 0 at the end of each run.
//
// A job of 10^8 images has some 1.5 million units, and a Slurm job that is requeued every few hours ends
// many runs: rebuilding the file whole at every end would read every unit's file again. So a run extends it
// by the units journaled since it was last written, and summary.json records what it holds:
//   "metrics": {"bytes": 51234, "crc32": "9a0c41d2", "units": [[0, 11], [14, 20], [12, 13]]}
// its size, its CRC-32 and its units in file order as ranges of consecutive ids (one run's new units in unit
// order after the earlier runs'). The file is rebuilt whole, in unit order, when that record is missing or
// does not match the file (its size: a run killed while appending, or an edit), or when a unit it holds was
// un-journaled or decoded again since. `vispec verify` checks the file against the record and the journal
// (scheduler/output_check.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scheduler/journal.h"

namespace vispec {

// Extends (or rebuilds) OUT/metrics.jsonl to hold every journaled unit; `previous`: the "metrics" record of
// the summary the last run left (null if none). Returns the record for the new summary.
nlohmann::json assemble_metrics(const std::string& out, const Journal& journal, const nlohmann::json& previous);

// The units of a "metrics" record, in file order; throws one line naming `where` if it is not one.
std::vector<int64_t> metrics_record_units(const nlohmann::json& record, const std::string& where);

}  // namespace vispec
