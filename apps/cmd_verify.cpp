// vispec verify OUT [--repair]: are a run's journaled outputs intact? Reads every file each journaled unit
// wrote and compares its size and CRC-32 with the journal's (scheduler/output_check.h). With --repair, the
// broken units are un-journaled (and their unit files removed, the distillation index rebuilt over the rest,
// summary.json cut down to its runs history and the journal's totals), so that rerunning the job recomputes
// exactly those units.
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include "apps/commands.h"
#include "core/device.h"
#include "core/check.h"
#include "core/logging.h"
#include "io/atomic_file.h"
#include "io/distill_index.h"
#include "io/distill_schema.h"
#include "io/run_layout.h"
#include "scheduler/journal.h"
#include "scheduler/output_check.h"
#include "scheduler/output_lock.h"
#include "scheduler/start_over.h"

namespace vispec {

namespace {
// After a repair summary.json's totals and its record of metrics.jsonl are no longer true, but its runs
// history is: the summary keeps the runs and what the journal now holds, and the rerun writes the rest. A
// file that is not a summary is removed, as a rerun would replace it.
void keep_runs_of_summary(const std::string& out, const std::map<int64_t, nlohmann::json>& done) {
  if (!file_exists(summary_path(out))) return;
  nlohmann::json summary;
  try {
    summary = nlohmann::json::parse(read_file(summary_path(out)));
  } catch (const nlohmann::json::exception&) {
  }
  if (!summary.is_object() || !summary.contains("runs") || !summary["runs"].is_array()) {
    std::filesystem::remove(summary_path(out));
    return;
  }
  int64_t images = 0;
  for (const auto& entry : done) images += entry.second.value("images", int64_t(0));
  nlohmann::json kept = {{"images", images},
                         {"units_done", int64_t(done.size())},
                         {"complete", false},
                         {"repaired_utc", utc_timestamp()},
                         {"runs", summary["runs"]}};
  for (const char* field :
       {"job", "model", "model_config", "decoder", "seed", "device", "device_model", "dtype", "units_total"})
    if (summary.contains(field)) kept[field] = summary[field];
  write_file_atomic(summary_path(out), kept.dump(2) + "\n");
}

int verify(const std::string& out, bool repair, int threads) {
  VISPEC_CHECK(!start_over_pending(out), out,
               ": a `vispec run --new` was interrupted here, its previous run half "
               "removed: rerun the job to finish it");
  require_run_directory(out);  // by content, before the lock or any repair
  std::unique_ptr<OutputLock> lock;
  if (repair) lock = std::make_unique<OutputLock>(out);  // no job may write while the journal is rewritten
  Journal journal(out);
  const auto check = check_outputs(out, journal.done(), /*checksums=*/true,
                                   threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency())));
  // A file the file system cannot read is neither whole nor damaged: say so, and repair nothing.
  const auto& unreadable = check.unreadable;
  VISPEC_CHECK(unreadable.empty(), unreadable.empty() ? "" : unreadable.front(),
               unreadable.size() > 1 ? " (and " + std::to_string(unreadable.size() - 1) + " more files)" : "",
               ": unreadable, so whether it is whole is unknown; nothing was repaired");
  std::vector<int64_t> broken;
  for (const auto& b : check.broken) {
    broken.push_back(b.unit);
    for (const auto& p : b.problems) std::cout << "unit " << b.unit << ": " << p << "\n";
  }
  // metrics.jsonl, summary.json and the distillation index, against the journal (rebuilt by a rerun).
  const auto assembled = check_assembled_outputs(out, journal.done());
  for (const auto& p : assembled) std::cout << p << "\n";
  std::cout << "verify " << out << ": " << journal.done().size() << " units journaled, " << check.files_checked
            << " files checked, " << broken.size() << " broken unit(s)";
  if (!assembled.empty()) std::cout << ", " << assembled.size() << " assembled file(s) not the journal's";
  if (check.units_unlisted > 0)
    std::cout << ", " << check.units_unlisted << " unit(s) journaled without a file list (not checked)";
  std::cout << std::endl;
  if (broken.empty() && assembled.empty()) return kExitOk;
  if (!repair) {
    std::cout << "run `vispec verify " << out << " --repair`, then rerun the job: it recomputes "
              << (broken.empty() ? "metrics.jsonl, summary.json and the distillation index" : "these units")
              << std::endl;
    return kExitBrokenOutputs;
  }
  journal.forget(broken);
  namespace fs = std::filesystem;
  for (const int64_t u : broken) {  // the rerun would remove them too; no file of a broken unit stays behind
    fs::remove(unit_metrics_path(out, u));
    fs::remove(shard_path(out, u));
    fs::remove(distill_unit_path(out, u));
  }
  keep_runs_of_summary(out, journal.done());
  fs::remove(metrics_path(out));  // rebuilt by the rerun, from the journal
  if (fs::exists(distill_index_path(out))) build_distill_index(out, distill_units(journal.done()));
  std::cout << "repaired: " << broken.size() << " unit(s) un-journaled; rerun the job to recompute them" << std::endl;
  return kExitOk;
}
}  // namespace

void add_verify_command(CLI::App& app, Action& action) {
  static std::string out;
  static bool repair = false;
  static int threads = 0;
  auto* cmd = app.add_subcommand("verify", "check a run's journaled outputs against their sizes and CRC-32s");
  cmd->add_option("out", out, "the run's output directory")->required();
  cmd->add_flag("--repair", repair, "un-journal the broken units so that a rerun recomputes exactly those");
  cmd->add_option("--threads", threads, "files checked at once (0: one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxThreads));
  cmd->callback([&action] { action = [] { return verify(out, repair, threads); }; });
}

}  // namespace vispec
