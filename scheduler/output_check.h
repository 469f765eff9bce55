// Are a run's journaled outputs still what the journal says? Each unit record lists its files with sizes and
// CRC-32s (io/unit_files.h). A rerun checks sizes (one stat per file) and recomputes the units that fail;
// `vispec verify OUT` also recomputes every checksum, and with --repair un-journals the broken units so that
// the rerun recomputes exactly those.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vispec {

struct BrokenUnit {
  int64_t unit = 0;
  std::vector<std::string> problems;  // one line per bad file (io/unit_files.h check_unit_file)
};

struct OutputCheck {
  std::vector<BrokenUnit> broken;  // ascending unit
  int64_t units_checked = 0, files_checked = 0;
  int64_t units_unlisted = 0;           // records without a file list (journaled by an older vispec): not checked
  std::vector<std::string> unreadable;  // files whose read failed (one line each): neither whole nor broken
};

// What a user reads besides the unit files, against the journal: OUT/metrics.jsonl must be the journaled
// units' metrics files in the order the summary records (scheduler/metrics_file.h; without that record, unit
// order), compared as the size and CRC-32 of their concatenation; OUT/summary.json the journal's
// totals (images, units done), OUT/distill/index.h5 map exactly the journaled units' files beside it. One
// line per problem; files that do not exist (a run that never ended) are none.
std::vector<std::string> check_assembled_outputs(const std::string& out_dir,
                                                 const std::map<int64_t, nlohmann::json>& done);

// Checks every journaled unit's files, `threads` at a time (stats and reads are latency-bound on network
// file systems).
OutputCheck check_outputs(const std::string& out_dir, const std::map<int64_t, nlohmann::json>& done, bool checksums,
                          int threads);

}  // namespace vispec
