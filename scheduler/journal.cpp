#include "scheduler/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "decoding/common/sample_stats.h"
#include "io/atomic_file.h"
#include "io/unit_files.h"

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

bool holds_journal(const std::string& out_dir) {
  const auto path = journal_path(out_dir);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) return false;
  // The first line, read with the system's calls so that an I/O error is one line naming the file, never taken
  // for "not a journal". A header is a few hundred bytes; a first line past 1 MiB is not one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  VISPEC_CHECK(fd >= 0, path, ": cannot open: ", std::strerror(errno));
  std::string first(size_t(1) << 20, '\0');
  size_t got = 0;
  while (got < first.size()) {
    const ssize_t n = ::read(fd, first.data() + got, first.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      VISPEC_FAIL(path, ": read failed: ", std::strerror(err));
    }
    if (n == 0 || std::memchr(first.data() + got, '\n', size_t(n))) {
      got += size_t(n);
      break;
    }
    got += size_t(n);
  }
  ::close(fd);
  first.resize(got);
  const auto header = nlohmann::json::parse(first.substr(0, first.find('\n')), nullptr, /*allow_exceptions=*/false);
  return header.is_object() && header.contains("fingerprint") && header.contains("identity");
}

void require_run_directory(const std::string& out_dir) {
  if (!holds_journal(out_dir))
    VISPEC_FAIL(out_dir,
                ": no vispec journal (journal.jsonl) here: not the output directory of a run; nothing was "
                "written");
}

Journal::Journal(const std::string& out_dir, const nlohmann::json& header) : path_(journal_path(out_dir)) {
  if (!file_exists(path_)) {
    write_file_atomic(path_, header.dump() + "\n");
    header_ = header;
    return;
  }
  resumed_ = true;
  load(&header, /*cut_torn_tail=*/true);
}

Journal::Journal(const std::string& out_dir) : path_(journal_path(out_dir)) {
  require_run_directory(out_dir);
  resumed_ = true;
  load(nullptr, /*cut_torn_tail=*/false);
}

void Journal::load(const nlohmann::json* expected, bool cut_torn_tail) {
  const std::string text = read_file(path_);
  size_t pos = 0, good_end = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) break;  // torn last line: no newline, cut below
    const std::string where = path_ + ":" + std::to_string(line_no);
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(text.substr(pos, nl - pos));
    } catch (const nlohmann::json::exception&) {
      VISPEC_CHECK(text.find('\n', nl + 1) == std::string::npos, where,
                   ": not a JSON line in the middle of the journal (the file was edited or corrupted)");
      break;  // a torn last line that happens to end in a newline
    }
    if (line_no == 1) {
      VISPEC_CHECK(record.is_object() && record.contains("fingerprint") && record.contains("identity"), where,
                   ": not a vispec journal header");
      if (expected && record["fingerprint"] != (*expected)["fingerprint"])
        VISPEC_FAIL(path_, ": written by a different job configuration (",
                    first_difference(record["identity"], (*expected)["identity"]),
                    "); rerun with --new to start this output directory over, or choose another --out");
      header_ = std::move(record);
    } else {
      VISPEC_CHECK(record.is_object() && record.contains("unit") && record["unit"].is_number_integer() &&
                       record.contains("images") && record["images"].is_number_integer(),
                   where, ": not a unit record (no integer 'unit' and 'images'; the file was edited or corrupted)");
      if (record.contains("files")) unit_files_from_json(record["files"], where);  // well-formed, or one line
      try {
        (void)stats_counts_from_json(record);  // the decoder counts summary.json sums: counts, or one line here
      } catch (const nlohmann::json::exception&) {
        VISPEC_FAIL(where,
                    ": a unit record whose decoder counts are missing or not counts (the file was edited or "
                    "corrupted)");
      }
      const int64_t unit = record["unit"].get<int64_t>();
      done_[unit] = std::move(record);  // a later record of a unit supersedes
    }
    good_end = nl + 1;
    pos = nl + 1;
  }
  VISPEC_CHECK(good_end > 0, path_, ": empty or torn header; remove the file to start over");
  if (cut_torn_tail && good_end < text.size()) {  // so that appends start on a fresh line
    VISPEC_CHECK(::truncate(path_.c_str(), off_t(good_end)) == 0, path_,
                 ": cannot truncate a torn line: ", std::strerror(errno));
  }
}

std::vector<DistillUnitRef> distill_units(const std::map<int64_t, nlohmann::json>& done) {
  std::vector<DistillUnitRef> units;
  for (const auto& [unit, record] : done) {
    DistillUnitRef ref{unit, record.at("images").get<int64_t>()};
    if (record.contains("files"))
      for (const auto& f : unit_files_from_json(record["files"], "journal unit " + std::to_string(unit)))
        if (f.name.rfind("distill/", 0) == 0) ref.file = f.digest;
    units.push_back(ref);
  }
  return units;
}

namespace {
void drop_sample_files(nlohmann::json& record) {
  if (!record.contains("files")) return;
  auto kept = nlohmann::json::array();
  for (auto& f : record["files"]) {
    const auto& name = f[0].get_ref<const std::string&>();
    if (name.rfind("images/", 0) != 0 && name.rfind("tokens/", 0) != 0) kept.push_back(std::move(f));
  }
  record["files"] = std::move(kept);
}
}  // namespace

void Journal::append(const nlohmann::json& record) {
  append_file_synced(path_, record.dump() + "\n");
  const int64_t unit = record.at("unit").get<int64_t>();
  appended_.insert(unit);
  auto& held = done_[unit];
  held = record;
  if (file_lists_released_) drop_sample_files(held);
}

void Journal::forget(const std::vector<int64_t>& units) {
  VISPEC_ASSERT(!file_lists_released_, "Journal::forget after release_sample_file_lists would drop file entries");
  for (const int64_t u : units) done_.erase(u);
  std::string text = header_.dump() + "\n";
  for (const auto& [unit, record] : done_) text += record.dump() + "\n";
  write_file_atomic(path_, text);
}

void Journal::release_sample_file_lists() {
  for (auto& [unit, record] : done_) drop_sample_files(record);
  file_lists_released_ = true;
}

}  // namespace vispec
