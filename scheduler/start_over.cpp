#include "scheduler/start_over.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>
#include <vector>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/run_layout.h"
#include "scheduler/journal.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
std::string mark_path(const std::string& out) { return out + "/.vispec-new"; }

bool is_run_directory(const std::string& name) {
  for (const char* dir : kRunDirectories)
    if (dir[0] && name == dir) return true;
  return false;
}

// OUT/dir's entries (none if it is missing); a listing that fails is the job's error, never "empty".
std::vector<std::string> entries(const std::string& out, const std::string& dir) {
  const fs::path path = dir.empty() ? fs::path(out) : fs::path(out) / dir;
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return names;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  VISPEC_CHECK(!ec, path.string(), ": cannot list: ", ec.message());
  return names;
}

void remove_file(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  VISPEC_CHECK(!ec, path.string(), ": cannot remove: ", ec.message());
}
}  // namespace

bool start_over_pending(const std::string& out) {
  std::error_code ec;
  return fs::exists(mark_path(out), ec);
}

void require_own_output(const std::string& out, const std::string& action) {
  if (start_over_pending(out) || holds_journal(out)) return;
  // No journal: only empty run directories and the lock may stand here.
  for (const char* dir : kRunDirectories)
    for (const auto& name : entries(out, dir)) {
      const bool ours = !dir[0] && (name == ".vispec.lock" || is_run_directory(name));
      VISPEC_CHECK(ours, (fs::path(out) / dir / name).string(), ": ", action,
                   " in a directory that holds no vispec journal (journal.jsonl); vispec writes and deletes only "
                   "in directories of its own runs: move the file or choose another --out");
    }
}

void start_over(const std::string& out) {
  require_own_output(out, "--new would start over");
  write_file_atomic(mark_path(out), "a vispec run --new is removing the previous run's files\n");
  remove_file(journal_path(out));  // first: from here on no unit of the old run counts as done
  int64_t removed = 0;
  for (const char* dir : kRunDirectories)
    for (const auto& name : entries(out, dir))
      if (is_run_file(dir, name) || is_run_temporary(dir, name)) {
        remove_file(fs::path(out) / dir / name);
        ++removed;
      }
  for (const char* dir : kRunDirectories) {
    std::error_code ec;
    if (dir[0]) fs::remove(fs::path(out) / dir, ec);  // only if empty: a file vispec did not write stays
  }
  remove_file(mark_path(out));
  spdlog::info("--new: {} files of the previous run removed from {}", removed, out);
}

}  // namespace vispec
