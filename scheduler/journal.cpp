#include "scheduler/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

namespace {
// "decoder.params.temperature: 1 -> 0", the first difference between two identities.
std::string first_difference(const nlohmann::json& old_id, const nlohmann::json& new_id) {
  const auto patch = nlohmann::json::diff(old_id, new_id);
  if (patch.empty()) return "the fingerprint differs";
  const auto& op = patch.front();
  std::string field = op.value("path", "");
  if (!field.empty() && field[0] == '/') field = field.substr(1);
  for (auto& c : field) c = c == '/' ? '.' : c;
  const auto ptr = nlohmann::json::json_pointer(op.value("path", ""));
  const std::string before = old_id.contains(ptr) ? old_id.at(ptr).dump() : "(absent)";
  const std::string after = new_id.contains(ptr) ? new_id.at(ptr).dump() : "(absent)";
  return field + " was " + before + ", now " + after;
}
}  // namespace

std::string journal_path(const std::string& out_dir) { return out_dir + "/journal.jsonl"; }

Journal::Journal(const std::string& out_dir, const nlohmann::json& header) : path_(journal_path(out_dir)) {
  if (!file_exists(path_)) {
    write_file_atomic(path_, header.dump() + "\n");
    return;
  }
  resumed_ = true;
  const std::string text = read_file(path_);
  size_t pos = 0, good_end = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) break;  // torn last line: no newline, cut below
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(text.substr(pos, nl - pos));
    } catch (const nlohmann::json::exception&) {
      VISPEC_CHECK(text.find('\n', nl + 1) == std::string::npos, path_, ":", line_no,
                   ": not a JSON line in the middle of the journal (the file was edited or corrupted)");
      break;  // a torn last line that happens to end in a newline
    }
    if (line_no == 1) {
      VISPEC_CHECK(record.contains("fingerprint") && record.contains("identity"), path_,
                   ":1: not a vispec journal header");
      if (record["fingerprint"] != header["fingerprint"])
        VISPEC_FAIL(path_, ": written by a different job configuration (", first_difference(record["identity"], header["identity"]),
                    "); rerun with --new to start this output directory over, or choose another --out");
    } else {
      VISPEC_CHECK(record.is_object() && record.contains("unit") && record["unit"].is_number_integer(), path_, ":",
                   line_no, ": not a unit record (no integer 'unit'; the file was edited or corrupted)");
      done_[record["unit"].get<int64_t>()] = record;
    }
    good_end = nl + 1;
    pos = nl + 1;
  }
  VISPEC_CHECK(good_end > 0, path_, ": empty or torn header; remove the file to start over");
  if (good_end < text.size()) {  // cut the torn tail so that appends start on a fresh line
    VISPEC_CHECK(::truncate(path_.c_str(), off_t(good_end)) == 0, path_, ": cannot truncate a torn line: ",
                 std::strerror(errno));
  }
}

std::map<int64_t, nlohmann::json> read_journal_units(const std::string& out_dir) {
  const auto path = journal_path(out_dir);
  VISPEC_CHECK(file_exists(path), path, ": no journal (is this a vispec run directory?)");
  std::map<int64_t, nlohmann::json> units;
  const std::string text = read_file(path);
  size_t pos = text.find('\n');  // skip the header
  while (pos != std::string::npos && pos + 1 < text.size()) {
    const size_t nl = text.find('\n', pos + 1);
    if (nl == std::string::npos) break;  // a torn last line is not a journaled unit
    try {
      const auto record = nlohmann::json::parse(text.substr(pos + 1, nl - pos - 1));
      units[record.at("unit").get<int64_t>()] = record;
    } catch (const nlohmann::json::exception&) {
      break;
    }
    pos = nl;
  }
  return units;
}

std::vector<DistillUnitRef> distill_units(const std::map<int64_t, nlohmann::json>& done) {
  std::vector<DistillUnitRef> units;
  for (const auto& [unit, record] : done) units.push_back({unit, record.at("images").get<int64_t>()});
  return units;
}

void Journal::append(const nlohmann::json& record) {
  append_file_synced(path_, record.dump() + "\n");
  done_[record.at("unit").get<int64_t>()] = record;
}

}  // namespace vispec
