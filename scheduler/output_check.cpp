#include "scheduler/output_check.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/distill_index.h"
#include "io/distill_schema.h"
#include "io/file_digest.h"
#include "io/metrics.h"
#include "io/run_layout.h"
#include "io/unit_files.h"
#include "scheduler/journal.h"
#include "scheduler/metrics_file.h"

namespace vispec {

std::vector<std::string> check_assembled_outputs(const std::string& out,
                                                 const std::map<int64_t, nlohmann::json>& done) {
  std::vector<std::string> problems;
  nlohmann::json summary;
  if (file_exists(summary_path(out))) {
    int64_t images = 0;
    for (const auto& entry : done) images += entry.second.value("images", int64_t(0));
    try {
      summary = nlohmann::json::parse(read_file(summary_path(out)));
      if (summary.at("images").get<int64_t>() != images ||
          summary.at("units_done").get<int64_t>() != int64_t(done.size()))
        problems.push_back(summary_path(out) + ": " + std::to_string(summary.at("images").get<int64_t>()) +
                           " images in " + std::to_string(summary.at("units_done").get<int64_t>()) +
                           " units; the journal holds " + std::to_string(images) + " in " +
                           std::to_string(done.size()));
    } catch (const nlohmann::json::exception& e) {
      problems.push_back(summary_path(out) + ": not a summary (" + e.what() + ")");
      summary = nullptr;
    }
  }
  if (file_exists(metrics_path(out))) {
    // The units the file holds, in its order: the summary's record of it (scheduler/metrics_file.h), else
    // (a summary from before that record) every journaled unit in unit order.
    std::vector<int64_t> order;
    bool listed = true;
    if (summary.is_object() && summary.contains("metrics")) {
      try {
        order = metrics_record_units(summary["metrics"], summary_path(out));
      } catch (const Error& e) {
        problems.push_back(e.what());
        listed = false;
      }
      std::vector<int64_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int64_t> journaled;
      for (const auto& entry : done) journaled.push_back(entry.first);
      if (listed && sorted != journaled) {
        problems.push_back(metrics_path(out) + ": holds " + std::to_string(order.size()) + " units by " +
                           summary_path(out) + ", the journal " + std::to_string(journaled.size()));
        listed = false;
      }
    } else {
      for (const auto& entry : done) order.push_back(entry.first);
    }
    DigestBuilder units;
    for (const int64_t unit : order) {
      const auto path = unit_metrics_path(out, unit);
      if (!file_exists(path)) {
        listed = false;  // (the unit's own check reports it)
        break;
      }
      read_chunks(path, [&](const char* data, size_t size) { units.update(data, size); });
    }
    const auto assembled = digest_file(metrics_path(out));
    if (listed && !(assembled == units.digest()))
      problems.push_back(metrics_path(out) + ": " + std::to_string(assembled.bytes) + " bytes, CRC-32 " +
                         crc32_hex(assembled.crc32) + "; the journaled units' metrics make " +
                         std::to_string(units.digest().bytes) + " bytes, CRC-32 " + crc32_hex(units.digest().crc32));
  }
  if (file_exists(distill_index_path(out))) {
    try {
      check_index_mappings(distill_index_path(out), distill_units(done));
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
  }
  return problems;
}

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
        try {
          if (auto problem = check_unit_file(out_dir, f, checksums); !problem.empty())
            b.problems.push_back(std::move(problem));
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mutex);
          result.unreadable.push_back(e.what());
        }
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
  std::sort(result.unreadable.begin(), result.unreadable.end());
  result.units_checked = int64_t(records.size()) - unlisted;
  result.files_checked = files;
  result.units_unlisted = unlisted;
  return result;
}

}  // namespace vispec
