#include "scheduler/run_job.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <new>
#include <thread>

#include "core/check.h"
#include "core/logging.h"
#include "core/device.h"
#include "core/exit_codes.h"
#include "core/fault_injection.h"
#include "core/stop_signal.h"
#include "io/atomic_file.h"
#include "io/distill_index.h"
#include "io/run_layout.h"
#include "scheduler/coordinator.h"
#include "scheduler/fingerprint.h"
#include "workers/batch_memory.h"
#include "scheduler/journal.h"
#include "scheduler/metrics_file.h"
#include "scheduler/mpi_node_weights.h"
#include "scheduler/output_check.h"
#include "scheduler/output_lock.h"
#include "scheduler/start_over.h"
#include "scheduler/unit_sources.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
constexpr int kCheckThreads = 8;  // stats in flight while a rerun checks the journaled files

// What rank 0 holds for the job's life: the output directory's lock and its journal.
struct Output {
  std::unique_ptr<OutputLock> lock;
  std::unique_ptr<Journal> journal;
};

// A journaled unit whose files are gone or of another size (deleted, truncated, a disk that lost them) is
// not done: it is un-journaled, and this run recomputes it. Sizes only (a stat per file); `vispec verify`
// reads the contents.
void recompute_broken_units(const std::string& out, Journal& journal) {
  const auto check = check_outputs(out, journal.done(), /*checksums=*/false, kCheckThreads);
  if (!check.broken.empty()) {
    std::vector<int64_t> units;
    for (const auto& b : check.broken) {
      units.push_back(b.unit);
      if (units.size() <= 5) spdlog::warn("unit {}: {}; recomputing it", b.unit, b.problems.front());
    }
    if (units.size() > 5) spdlog::warn("... and {} more broken unit(s); recomputing them", units.size() - 5);
    journal.forget(units);
  }
  journal.release_sample_file_lists();
}

// Rank 0, before any unit: the lock (before anything in OUT changes), directories, the journal (refusing a
// different configuration), leftovers of a killed run removed, errors.jsonl. Throws with one line on any
// problem.
Output prepare_output(const JobPlan& plan, bool start_over, int ranks) {
  const auto& out = plan.job.out_dir;
  const auto identity = job_identity(plan);  // before anything is written: it may fail (an unusable device)
  Output held;
  require_own_output(out, "a run would write");  // before the lock: a folder of the user's gets nothing, not even it
  held.lock = std::make_unique<OutputLock>(out);
  if (!start_over && start_over_pending(out)) spdlog::warn("{}: finishing the --new a killed run began", out);
  if (start_over || start_over_pending(out)) ::vispec::start_over(out);
  const uint64_t U = uint64_t(plan.job.unit_size);
  const nlohmann::json header = {{"journal", 1},
                                 {"fingerprint", fingerprint(identity)},
                                 {"identity", identity},
                                 {"units", int64_t((plan.plan.id_count + U - 1) / U)},
                                 {"unit_size", plan.job.unit_size},
                                 {"sample_ids", plan.plan.id_count},
                                 {"samples", plan.plan.samples},
                                 {"job", plan.job.file},
                                 {"created_utc", utc_timestamp()}};
  held.journal = std::make_unique<Journal>(out, header);  // first: it refuses another job before anything changes
  const auto& journal = held.journal;
  for (const char* dir : {"images", "tokens"})
    if (plan.job.output == "files") make_directories(out + "/" + dir);
  if (plan.job.output == "shards") make_directories(out + "/shards");
  make_directories(out + "/metrics");
  if (plan.job.distill.enabled) make_directories(out + "/distill");
  snapshot_prompts(plan.job.prompts_file, out, plan.plan.prompts_fnv);
  // The job as resolved, for `vispec resume OUT`; rewritten by every run (the same job, or the journal has
  // refused it above), so it names OUT where it is now.
  write_file_atomic(job_snapshot_path(out), resolved_job_yaml(plan.job, plan.decoder.numbers, plan.decoder.words));
  recompute_broken_units(out, *journal);
  // A killed run can leave temporaries and per-unit files of unjournaled units: remove them (those units
  // rerun), and nothing else: a name vispec does not write is not vispec's to delete.
  int64_t removed = 0;
  for (const char* dir : kRunDirectories)
    if (fs::is_directory(fs::path(out) / dir))
      for (const auto& e : fs::directory_iterator(fs::path(out) / dir)) {
        const auto name = e.path().filename().string();
        const int64_t unit = unit_file_id(dir, name);
        if (is_run_temporary(dir, name) || (unit >= 0 && !journal->is_done(unit))) removed += fs::remove(e.path());
      }
  const auto errors_path = out + "/errors.jsonl";
  if (plan.plan.errors.empty()) {
    fs::remove(errors_path);
  } else {
    std::string lines;
    constexpr size_t kLogged = 5;  // the rest are in errors.jsonl: a file of a million bad lines is one error
    for (const auto& e : plan.plan.errors) {
      lines +=
          nlohmann::json{{"file", e.file}, {"line", e.line}, {"field", "prompt"}, {"error", e.message}}.dump() + "\n";
      if (&e - plan.plan.errors.data() < ptrdiff_t(kLogged)) spdlog::warn("skipped: {}", e.message);
    }
    if (plan.plan.errors.size() > kLogged)
      spdlog::warn("skipped: {} more prompt lines, listed in {}", plan.plan.errors.size() - kLogged, errors_path);
    write_file_atomic(errors_path, lines);
  }
  // Every field the decoder reads, defaults filled in (what a job that leaves one out gets), in one line.
  std::string fields;
  for (const auto& [key, value] : plan.decoder.numbers)
    fields += fmt::format("{}{} {}", fields.empty() ? "" : ", ", key, value);
  for (const auto& [key, value] : plan.decoder.words)
    fields += fmt::format("{}{} {}", fields.empty() ? "" : ", ", key, value);
  spdlog::info("decoder {}: {}", plan.decoder.name, fields);
  spdlog::info("job {}: {} samples in {} units of {} ({} done before{}), decoder {}, {} rank(s), {} schedule",
               plan.job.file, plan.plan.samples, header["units"].get<int64_t>(), plan.job.unit_size,
               journal->done().size(), removed ? fmt::format(", {} leftover files removed", removed) : "",
               plan.job.decoder.name, ranks, plan.job.schedule);
  return held;
}

// The summary an earlier run left in OUT (null if there is none). A summary that is not one (edited, or from a
// version without runs) is noted in one warning and nothing of it is carried over: it is derived data, and
// `vispec verify` reports it; a summary that cannot be read is an error like any other read.
nlohmann::json previous_summary(const std::string& out) {
  if (!file_exists(summary_path(out))) return nullptr;
  const auto text = read_file(summary_path(out));
  try {
    auto summary = nlohmann::json::parse(text);
    if (summary.at("runs").is_array()) return summary;
  } catch (const nlohmann::json::exception&) {
  }
  spdlog::warn("{}: not a summary with a list of runs; the runs before this one are not carried over",
               summary_path(out));
  return nullptr;
}

// Rank 0, after every rank has stopped: OUT/metrics.jsonl extended by the units journaled since the last run
// (scheduler/metrics_file.h), and OUT/summary.json.
void finish_output(const JobPlan& plan, const Journal& journal, const CoordinatorOutcome& c, int ranks) {
  const auto& out = plan.job.out_dir;
  const auto previous = previous_summary(out);
  const auto metrics = assemble_metrics(
      out, journal, previous.is_null() ? nlohmann::json() : previous.value("metrics", nlohmann::json()));
  SampleStats total;
  int64_t images = 0;
  for (const auto& [unit, record] : journal.done()) {
    images += record.at("images").get<int64_t>();
    total += stats_counts_from_json(record);
  }
  if (plan.job.distill.enabled) build_distill_index(out, distill_units(journal.done()));
  int64_t images_run = 0, units_run = 0;
  double wait = 0;
  nlohmann::json per_rank = nlohmann::json::array();
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    const auto& t = c.ranks[r];
    images_run += t.images;
    units_run += t.units;
    wait += t.wait_seconds;
    per_rank.push_back({{"rank", r},
                        {"device", t.load.device},
                        {"device_model", t.load.device_model},
                        {"units", t.units},
                        {"images", t.images},
                        {"busy_s", t.busy_seconds},
                        {"images_per_busy_s", t.busy_seconds > 0 ? double(t.images) / t.busy_seconds : 0.0},
                        {"wait_s", t.wait_seconds},
                        {"load_s", t.load.seconds},
                        {"weights_read_mb", double(t.load.read_bytes) / 1e6},
                        {"weights_received_mb", double(t.load.received_bytes) / 1e6}});
  }
  const double n = double(std::max<int64_t>(1, images));
  // Every run's throughput, the runs before this one from the summary they left: a rerun that had nothing to
  // do adds a run of 0 images and loses nothing. images_per_s is over the runs that made images.
  auto runs = previous.is_null() ? nlohmann::json::array() : previous["runs"];
  const double run_rate = c.wall_seconds > 0 ? double(images_run) / c.wall_seconds : 0.0;
  runs.push_back({{"finished_utc", utc_timestamp()},
                  {"ranks", ranks},
                  {"device", pick_device(plan.job.device, 0).str()},
                  {"images", images_run},
                  {"wall_s", c.wall_seconds},
                  {"images_per_s", run_rate},
                  {"interrupted", c.interrupted}});
  double made = 0, busy = 0;
  for (const auto& r : runs)
    if (r.value("images", int64_t(0)) > 0) {
      made += double(r.value("images", int64_t(0)));
      busy += r.value("wall_s", 0.0);
    }
  nlohmann::json summary = {{"job", plan.job.file},
                            {"model", plan.model.name},
                            {"model_config", fs::absolute(plan.model.file).lexically_normal().string()},
                            {"decoder", plan.job.decoder.name},
                            {"seed", plan.job.seed},
                            {"device", pick_device(plan.job.device, 0).str()},
                            {"device_model", device_model(pick_device(plan.job.device, 0))},
                            {"dtype", plan.model.dtype},
                            {"ranks", ranks},
                            {"schedule", plan.job.schedule},
                            {"read_weights", plan.job.read_weights},
                            {"units_total", c.units_total},
                            {"units_done", int64_t(journal.done().size())},
                            {"complete", int64_t(journal.done().size()) == c.units_total},
                            {"interrupted", c.interrupted},
                            {"prompt_errors", plan.plan.errors.size()},
                            {"images", images},
                            {"images_this_run", images_run},
                            {"wall_s", c.wall_seconds},
                            {"images_per_s", busy > 0 ? made / busy : 0.0},
                            {"scheduling_overhead_ms_per_unit", units_run > 0 ? 1e3 * wait / double(units_run) : 0.0},
                            {"target_forwards_per_image", double(total.target_forwards) / n},
                            {"draft_forwards_per_image", double(total.draft_forwards) / n},
                            {"mean_accepted_length", total.mean_accepted_length()},
                            {"acceptance_rate", total.acceptance_rate()},
                            {"idle_row_fraction", total.idle_fraction()},
                            {"per_rank", per_rank},
                            {"runs", runs},
                            {"metrics", metrics}};
  write_file_atomic(summary_path(out), summary.dump(2) + "\n");
  spdlog::info("{}: {} of {} units, {} images ({} this run in {:.2f} s, {:.2f} images/s) -> {}",
               summary["complete"].get<bool>() ? "done" : "stopped", journal.done().size(), c.units_total, images,
               images_run, c.wall_seconds, run_rate, out);
}

// One write: under mpirun each write is forwarded on its own, and another process's output may land between two.
void print_error(const std::string& message) { std::cerr << ("vispec: error: " + message + "\n") << std::flush; }

int run_ranks(MpiSession& session, const RunOptions& o);
}  // namespace

int run_job(const RunOptions& o) {
  MpiSession session;
  try {
    return run_ranks(session, o);
  } catch (const std::exception& e) {
    fail_all_ranks(session, e);
  }
}

namespace {
// The job file and output directory of `vispec run JOB|OUT` and `vispec resume OUT`: a run's output directory
// stands for the job it kept (OUT/job.yaml), written to that directory, which may have moved since.
std::pair<std::string, std::string> job_and_out(const RunOptions& o) {
  std::error_code ec;
  const bool directory = fs::is_directory(o.job_file, ec);
  if (!directory && o.resume) VISPEC_FAIL(o.job_file, ": not a directory (vispec resume takes the OUT of a run)");
  if (!directory) return {o.job_file, o.out_dir};
  // By content: a folder with a job.yaml of the user's own is not a run's, and nothing is written into it.
  if (!holds_journal(o.job_file))
    VISPEC_FAIL(o.job_file, ": no vispec journal (journal.jsonl) here: not the output directory of a run (give a ",
                "job file, or a run's OUT); nothing was written");
  const auto job = job_snapshot_path(o.job_file);
  if (!file_exists(job))
    VISPEC_FAIL(o.job_file, ": no job.yaml here: not the output directory of a run (give a job file, or a run's OUT)");
  return {job, o.out_dir.empty() ? o.job_file : o.out_dir};
}

int run_ranks(MpiSession& session, const RunOptions& o) {
  if (session.rank() != 0 && spdlog::get_level() < spdlog::level::warn) spdlog::set_level(spdlog::level::warn);
  install_stop_handlers();

  // Every rank reads and checks the job, its model config and decoder; rank 0 alone checks the weight files,
  // scans the prompt list and prepares OUT. All ranks agree on the outcome before any decoding starts, and
  // only one line is printed.
  JobPlan plan;
  Output output;
  int code = kExitOk;
  std::string error;
  try {
    // A worker gets the place of each unit's prompts in the file with the unit.
    const auto [job_file, out_dir] = job_and_out(o);
    plan = plan_job(job_file, o.overrides, out_dir, /*first_rank=*/session.rank() == 0);
    if (fault_value("bad-alloc") == session.rank()) throw std::bad_alloc();
    if (session.rank() == 0) {
      // The batch, from rank 0's device (`batch_size: auto`, or an explicit one checked to fit), before the
      // journal: it is part of the job's identity. Every rank takes rank 0's below.
      const auto device = pick_device(plan.job.device, 0);
      plan.job.batch_size = plan_batch_size(plan, batch_memory(plan), free_device_memory(device), device.str(),
                                            o.start_over ? 0 : journaled_batch_size(plan.job.out_dir));
      output = prepare_output(plan, o.start_over, session.size());
    }
  } catch (const Error& e) {
    code = kExitUserError;
    error = e.what();
  }
  const int rank0_code = session.broadcast_int(code);
  if (rank0_code != kExitOk) {
    if (session.rank() == 0) print_error(error);
    return rank0_code;
  }
  if (code != kExitOk) print_error("rank " + std::to_string(session.rank()) + ": " + error);  // rank 0 was fine
  plan.job.batch_size = session.broadcast_int(int(plan.job.batch_size));  // rank 0's: at most kMaxBatchSize

  const WorkerOptions worker{session.rank(), session.local_rank(), session.local_size()};
  // Every rank that planned the job loads its models here, on its main thread. With read_weights:
  // once_per_node, and every rank able to take part, a node's first rank reads the weight files and hands the
  // tensors to the others (a collective within the node); a rank that failed to plan loads nothing, so then
  // each rank reads its own. A failure here ends every rank (run_job's fail_all_ranks): never a hang.
  std::unique_ptr<PreparedWorker> prepared;
  {
    const bool all_planned = session.min_int(code == kExitOk ? 1 : 0) == 1;
    MpiNodeWeights node(session);
    ShareWeightsOnNode scope(all_planned && plan.job.read_weights == "once_per_node" ? &node : nullptr);
    if (code == kExitOk) prepared = prepare_worker(plan, worker);
  }
  if (session.rank() != 0) {
    MpiUnitSource source(session);
    if (code == kExitOk) {
      run_worker(plan, worker, *prepared, source);
    } else {  // tell the coordinator, so that it drains the others
      WorkerReport r;
      r.rank = session.rank();
      r.error = error;
      r.error_code = code;
      while (source.next(r)) {
      }
    }
    return session.broadcast_int(0);
  }

  LocalChannel local;
  std::thread decoding([&] { run_worker(plan, worker, *prepared, local); });
  auto& journal = output.journal;
  Coordinator coordinator(session, local, plan, *journal);
  CoordinatorOutcome outcome;
  try {
    outcome = coordinator.run();
  } catch (const std::exception& e) {
    fail_all_ranks(session, e);  // ends the process: this rank's decoding thread is not joined
  }
  decoding.join();
  code = outcome.exit_code;
  try {
    finish_output(plan, *journal, outcome, session.size());
  } catch (const Error& e) {
    if (code == kExitOk) code = kExitUserError;
    if (outcome.error.empty()) print_error(e.what());
  }
  if (!outcome.error.empty()) print_error(outcome.error);
  if (code == kExitOk && !plan.plan.errors.empty()) {
    spdlog::warn("{} prompt line(s) skipped: see {}/errors.jsonl", plan.plan.errors.size(), plan.job.out_dir);
    code = kExitPromptErrors;
  }
  if (code == kExitInterrupted)
    spdlog::warn("interrupted: {} of {} units journaled; rerun the same command to resume (exit code {})",
                 journal->done().size(), outcome.units_total, kExitInterrupted);
  return session.broadcast_int(code);
}
}  // namespace

}  // namespace vispec
