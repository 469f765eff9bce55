// OUT/journal.jsonl: the record of which units are done, the only thing that makes a unit count.
//
//   {"journal": 1, "fingerprint": "9f2c...", "identity": {...}, "units": 12, "unit_size": 64, ...}   header
//   {"unit": 3, "rank": 1, "images": 64, "seconds": 7.9, ..., "files": [["images/00000192.png", 1093,
//    "9a0c41d2"], ...]}                                                                              one per unit
//
// Rank 0 appends a unit's line (and fsyncs) only after the worker has renamed every file of the unit and
// fsynced their directories. The line lists those files with their sizes and CRC-32s (io/unit_files.h), so
// that a file deleted, truncated or damaged after the run is found (scheduler/output_check.h) instead of
// being read as data. A rerun reads the journal, skips its units and recomputes every other one. The
// header's fingerprint identifies everything that decides the outputs (scheduler/fingerprint.h): a rerun with
// a different one is refused unless --new. A torn last line (a kill during the append) is cut off on reopen.
#pragma once

#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/distill_index.h"

namespace vispec {

class Journal {
 public:
  // For a run: opens (creating with `header` when absent) OUT/journal.jsonl, cutting a torn last line. header
  // must hold "fingerprint" and "identity"; an existing journal with another fingerprint throws, naming the
  // first field that differs.
  Journal(const std::string& out_dir, const nlohmann::json& header);
  // For tools (verify, distill-index): an existing journal, whatever its fingerprint; the file is not changed
  // until forget() is called (the caller holds the output lock then).
  explicit Journal(const std::string& out_dir);

  const std::map<int64_t, nlohmann::json>& done() const { return done_; }
  bool is_done(int64_t unit) const { return done_.count(unit) != 0; }
  bool resumed() const { return resumed_; }
  const nlohmann::json& header() const { return header_; }
  // Appends the unit's record and fsyncs.
  void append(const nlohmann::json& record);
  // The units appended by this process: this run's (an earlier record of one may have been forgotten first).
  const std::set<int64_t>& appended() const { return appended_; }
  // Un-journals units (their outputs are broken): rewrites the journal without their records, atomically.
  void forget(const std::vector<int64_t>& units);
  // Once the records have been checked: drops the per-sample entries (images/, tokens/) of the file lists
  // held in memory, now and for later appends (a million-image job's take hundreds of MB as JSON); the unit
  // files' entries (metrics, distillation) stay for the end of the run. The journal file keeps every entry.
  void release_sample_file_lists();
  const std::string& path() const { return path_; }

 private:
  void load(const nlohmann::json* expected_header, bool cut_torn_tail);

  std::string path_;
  nlohmann::json header_;
  std::map<int64_t, nlohmann::json> done_;  // the last record of each unit
  std::set<int64_t> appended_;
  bool resumed_ = false, file_lists_released_ = false;
};

std::string journal_path(const std::string& out_dir);
// Whether out_dir is a run's, by content: its journal.jsonl is a regular file (not a link) whose first line is a
// vispec journal header. What `vispec run OUT` and `vispec resume OUT` ask before writing anything there.
bool holds_journal(const std::string& out_dir);
// The same as a check before a command reads or repairs a run (verify, distill-index, export, Journal(out_dir)):
// one line naming out_dir where it holds no vispec journal.
void require_run_directory(const std::string& out_dir);
// The distillation index's view of journaled units: (unit, images, the unit file's size and CRC-32 when
// the record lists it) in unit order.
std::vector<DistillUnitRef> distill_units(const std::map<int64_t, nlohmann::json>& done);

}  // namespace vispec
