// The files one unit of a job wrote, as its journal record lists them (scheduler/journal.h):
//   "files": [["images/00000042.png", 1093, "9a0c41d2"], ["tokens/00000042.npy", 1152, "..."], ...]
// each a path relative to OUT, a size in bytes and a CRC-32 (io/file_digest.h). Checking a size costs one stat,
// so a rerun, `vispec distill-index` and the trainers check sizes; `vispec verify` also reads every file and
// compares checksums.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/file_digest.h"

namespace vispec {

struct UnitFile {
  std::string name;  // relative to OUT
  FileDigest digest;
};

nlohmann::json unit_files_to_json(const std::vector<UnitFile>& files);
// Throws one line naming `where` (e.g. "OUT/journal.jsonl:7") if `j` is not such a list.
std::vector<UnitFile> unit_files_from_json(const nlohmann::json& j, const std::string& where);

// Empty if OUT/<name> is what the journal says; else what is wrong, one line naming the file:
// "OUT/images/00000042.png: missing", "...: 0 bytes, journaled 1093", "...: CRC-32 0badf00d, journaled 9a0c41d2".
// A file that cannot be read (an I/O error) throws: that it cannot be checked is not that it is damaged.
std::string check_unit_file(const std::string& out, const UnitFile& file, bool checksum);

}  // namespace vispec
