#include "scheduler/coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "core/exit_codes.h"
#include "core/logging.h"
#include "core/fault_injection.h"
#include "core/stop_signal.h"
#include "scheduler/messages.h"

namespace vispec {

namespace {
using Clock = std::chrono::steady_clock;
constexpr double kProgressEverySeconds = 5.0;
}  // namespace

Coordinator::Coordinator(const MpiSession& session, LocalChannel& local, const JobPlan& plan, Journal& journal)
    : session_(session), local_(local), plan_(plan), journal_(journal) {
  const bool dynamic = plan.job.schedule == "dynamic";
  pending_.resize(dynamic ? 1 : size_t(session.size()));
  const uint64_t U = uint64_t(plan.job.unit_size);
  out_.units_total = int64_t((plan.plan.id_count + U - 1) / U);
  out_.ranks.resize(size_t(session.size()));
  in_flight_.assign(size_t(session.size()), 0);
  for (const auto& [unit, record] : journal.done()) images_done_before_ += record.at("images").get<int64_t>();
  for (int64_t u = 0; u < out_.units_total; ++u) {
    if (journal.is_done(u)) {
      ++out_.units_done_before;
      continue;
    }
    pending_[dynamic ? 0 : size_t(u % session.size())].push_back(u);
  }
}

std::optional<WorkUnit> Coordinator::next_unit(int rank) {
  auto& queue = pending_[pending_.size() == 1 ? 0 : size_t(rank)];
  if (queue.empty()) return std::nullopt;
  const int64_t u = queue.front();
  queue.pop_front();
  const uint64_t U = uint64_t(plan_.job.unit_size);
  return WorkUnit{u, uint64_t(u) * U, std::min(uint64_t(u + 1) * U, plan_.plan.id_count), plan_.plan.units[size_t(u)]};
}

std::optional<WorkUnit> Coordinator::handle(int source, const WorkerReport& r) {
  auto& tally = out_.ranks[size_t(source)];
  in_flight_[size_t(source)] = 0;  // the unit in hand is done (counted below) or abandoned
  tally.wait_seconds += r.wait_seconds;
  if (r.loaded) {
    tally.load = *r.loaded;
    // Every rank's device in rank 0's log (the other ranks log warnings only): a rank on the wrong GPU, or on a
    // CPU beside GPUs, shows here.
    spdlog::info("rank {} decodes on {} ({})", source, r.loaded->device, r.loaded->device_model);
  }
  if (r.done) {
    const auto& d = *r.done;
    if (fault_at("coordinator-throws", d.unit)) throw std::runtime_error("injected coordinator failure (VISPEC_FAULT)");
    try {
      auto record = stats_counts_json(d.stats);
      record.update({{"unit", d.unit},
                     {"rank", source},
                     {"images", d.images},
                     {"seconds", d.seconds},
                     {"files", unit_files_to_json(d.files)}});
      journal_.append(record);
    } catch (const std::exception& e) {
      if (out_.error.empty()) {  // e.g. a full disk: the journal keeps every line written before
        out_.error = e.what();
        out_.exit_code = kExitUserError;
      }
    }
    ++tally.units;
    tally.images += d.images;
    tally.busy_seconds += d.seconds;
    ++units_this_run_;
    images_this_run_ += d.images;
  }
  if (!r.error.empty() && out_.error.empty()) {
    out_.error = session_.size() > 1 ? "rank " + std::to_string(source) + ": " + r.error : r.error;
    out_.exit_code = r.error_code;
  }
  if (r.stopping || stop_requested()) out_.interrupted = true;
  const bool draining = !out_.error.empty() || out_.interrupted || !r.error.empty();
  std::optional<WorkUnit> unit = draining ? std::nullopt : next_unit(source);
  if (!unit) ++finished_ranks_;
  return unit;
}

void Coordinator::log_progress(bool force) {
  const auto now = Clock::now();
  if (!force && std::chrono::duration<double>(now - last_log_).count() < kProgressEverySeconds) return;
  last_log_ = now;
  const double wall = std::chrono::duration<double>(now - start_).count();
  in_flight_[0] = local_.in_flight();
  // Per rank: its images this run, the batches of its unit in hand included, over the run's wall time.
  std::vector<double> rank_rate(out_.ranks.size());
  int64_t images = images_this_run_;
  for (size_t r = 0; r < rank_rate.size(); ++r) {
    images += in_flight_[r];
    rank_rate[r] = wall > 0 ? double(out_.ranks[r].images + in_flight_[r]) / wall : 0.0;
  }
  const double rate = wall > 0 ? double(images) / wall : 0.0;
  const int64_t left = std::max<int64_t>(0, plan_.plan.samples - images_done_before_ - images);
  const std::string eta = rate > 0 ? hours_minutes_seconds(double(left) / rate) : std::string("?");
  std::string ranks;
  if (rank_rate.size() > 1) {
    const auto [slow, fast] = std::minmax_element(rank_rate.begin(), rank_rate.end());
    ranks = fmt::format("  | slowest r{} {:.2f}/s, fastest r{} {:.2f}/s", slow - rank_rate.begin(), *slow,
                        fast - rank_rate.begin(), *fast);
  }
  spdlog::info("units {}/{}  {} images this run  {:.2f} images/s  ETA {}{}", out_.units_done_before + units_this_run_,
               out_.units_total, images, rate, eta, ranks);
}

CoordinatorOutcome Coordinator::run() {
  start_ = last_log_ = Clock::now();
  bool told = false;
  while (finished_ranks_ < session_.size()) {
    bool busy = false;
    if (auto m = session_.poll()) {
      if (m->tag == kTagProgress) {
        in_flight_[size_t(m->source)] += std::stoll(m->text);
      } else {
        const auto reply = handle(m->source, decode_report(m->text));
        session_.send(m->source, kTagAssign, encode_assignment(reply));
      }
      busy = true;
    }
    if (auto r = local_.take()) {
      local_.answer(handle(0, *r));
      busy = true;
    }
    if (stop_requested() && !told) {
      told = true;
      out_.interrupted = true;
      spdlog::warn("stop requested (signal {}): no new units; units in hand are abandoned at their next batch",
                   stop_signal_number());
    }
    log_progress(false);
    // Idle: sleep rather than spin. 2 ms is nothing against a unit of seconds, while a tighter loop steals
    // enough CPU from the decoding threads (OpenMP spins at its barriers) to halve their speed (measured).
    if (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  out_.wall_seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  log_progress(true);
  if (out_.error.empty() && out_.interrupted) out_.exit_code = kExitInterrupted;
  return out_;
}

}  // namespace vispec
