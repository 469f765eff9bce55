#include "scheduler/output_check.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "io/unit_files.h"

namespace vispec {

OutputCheck check_outputs(const std::string& out_dir, const std::map<int64_t, nlohmann::json>& done, bool checksums,
                          int threads) {
  std::vector<const std::pair<const int64_t, nlohmann::json>*> records;
  for (const auto& entry : done) records.push_back(&entry);
  OutputCheck result;
  std::mutex mutex;
  std::atomic<size_t> next{0};
  std::atomic<int64_t> files{0}, unlisted{0};
  const auto work = [&] {
    for (size_t i = next++; i < records.size(); i = next++) {
      const auto& [unit, record] = *records[i];
      if (!record.contains("files")) {
        ++unlisted;
        continue;
      }
      BrokenUnit b{unit, {}};
      // The journal was parsed (and its lists checked) when it was opened: this cannot throw.
      for (const auto& f : unit_files_from_json(record["files"], "journal")) {
        ++files;
        if (auto problem = check_unit_file(out_dir, f, checksums); !problem.empty())
          b.problems.push_back(std::move(problem));
      }
      if (!b.problems.empty()) {
        std::lock_guard<std::mutex> lock(mutex);
        result.broken.push_back(std::move(b));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  std::sort(result.broken.begin(), result.broken.end(),
            [](const BrokenUnit& a, const BrokenUnit& b) { return a.unit < b.unit; });
  result.units_checked = int64_t(records.size()) - unlisted;
  result.files_checked = files;
  result.units_unlisted = unlisted;
  return result;
}

}  // namespace vispec
