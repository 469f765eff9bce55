// OUT/journal.jsonl: the record of which units are done, the only thing that makes a unit count.
//
//   {"journal": 1, "fingerprint": "9f2c...", "identity": {...}, "units": 12, "unit_size": 64, ...}   header
//   {"unit": 3, "rank": 1, "images": 64, "seconds": 7.9, "target_forwards": 16384, ...}            one per unit
//
// Rank 0 appends a unit's line (and fsyncs) only after the worker has renamed every file of the unit and
// fsynced their directories. A rerun reads the journal, skips its units and recomputes every other one. The
// header's fingerprint identifies everything that decides the outputs (scheduler/fingerprint.h): a rerun with
// a different one is refused unless --new. A torn last line (a kill during the append) is cut off on reopen.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/distill_index.h"

namespace vispec {

class Journal {
 public:
  // Opens (creating with `header` when absent) OUT/journal.jsonl. header must hold "fingerprint" and
  // "identity"; an existing journal with another fingerprint throws, naming the first field that differs.
  Journal(const std::string& out_dir, const nlohmann::json& header);

  const std::map<int64_t, nlohmann::json>& done() const { return done_; }
  bool is_done(int64_t unit) const { return done_.count(unit) != 0; }
  bool resumed() const { return resumed_; }
  // Appends the unit's record and fsyncs.
  void append(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::map<int64_t, nlohmann::json> done_;
  bool resumed_ = false;
};

std::string journal_path(const std::string& out_dir);
// The unit records of an existing journal, without checking a fingerprint (for tools such as distill-index).
std::map<int64_t, nlohmann::json> read_journal_units(const std::string& out_dir);
// The distillation index's view of journaled units: (unit, images) in unit order.
std::vector<DistillUnitRef> distill_units(const std::map<int64_t, nlohmann::json>& done);

}  // namespace vispec
