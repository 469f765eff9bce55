#include "workers/worker.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/check.h"
#include "core/device.h"
#include "core/fault_injection.h"
#include "core/stop_signal.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/sampler.h"
#include "io/atomic_file.h"
#include "io/image_tensor.h"
#include "io/npy.h"
#include "io/png.h"
#include "io/run_layout.h"
#include "io/tar_archive.h"
#include "models/checkpoints/node_weights.h"
#include "models/gpt/step_graph.h"
#include "workers/distill_capture.h"
#include "workers/loaded_models.h"
#include "workers/request_builder.h"

namespace vispec {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The weight files whose logits a decode samples: the target's and its drafters' (decoding/drafters/).
std::string logit_weights(const ModelConfig& m, const std::vector<std::string>& drafters) {
  std::string files = "target " + m.gpt_weights;
  for (const auto& d : drafters) {
    if (d == "eagle_head") files += ", EAGLE head " + m.eagle_head;
    if (d == "ssd_heads") files += ", SSD heads " + m.ssd_heads;
    if (d == "gpt") files += ", draft GPT " + m.draft_gpt_weights;
    if (d == "mulo") files += ", MuLo-SD drafter " + m.mulo.gpt_weights;
  }
  return files;
}

class UnitWriter {
 public:
  // source: told of every batch written (UnitSource::progress), for the progress line.
  UnitWriter(const JobPlan& plan, LoadedModels& models, Decoder& decoder, RequestBuilder& make_request,
             torch::Device device, UnitSource& source)
      : plan_(plan), models_(models), decoder_(decoder), device_(device), make_request_(make_request), source_(source) {
  }

  // Decodes and writes one unit; nullopt if a stop signal arrived first (the unit is abandoned).
  std::optional<UnitDone> run(const WorkUnit& unit) {
    maybe_kill_at("kill-at-unit", unit.id);
    if (fault_at("fs-error", unit.id))  // as std::filesystem throws on a vanished directory
      throw std::filesystem::filesystem_error("injected (VISPEC_FAULT)", plan_.job.out_dir,
                                              std::make_error_code(std::errc::io_error));
    if (fault_at("json-error", unit.id)) (void)nlohmann::json::parse("{\"injected\": VISPEC_FAULT}");
    const auto& job = plan_.job;
    const auto samples = read_samples(plan_.model, prompts_snapshot_path(job.out_dir), job.prompts_file,
                                      job.images_per_prompt, unit.start, unit.first_id, unit.end_id);
    const PlannedSample* begin = samples.data();
    const int64_t count = int64_t(samples.size());
    const int64_t grid = plan_.model.gpt.grid_size;
    const auto t0 = Clock::now();
    UnitDone done;
    done.unit = unit.id;
    std::string metrics;
    // output: shards: the unit's samples stream into one archive, renamed into place when whole.
    std::unique_ptr<TarWriter> shard;
    if (job.output == "shards") shard = std::make_unique<TarWriter>(shard_path(job.out_dir, unit.id));
    // Distillation rows go to a background writer while the next batch decodes (workers/distill_capture.h).
    std::unique_ptr<DistillUnitWriter> distill;
    if (job.distill.enabled) {
      DistillHeader h;
      h.unit = unit.id;
      h.samples = count;
      h.grid_size = grid;
      h.hidden_dim = plan_.model.gpt.dim;
      h.model = plan_.model.name;
      h.decoder = job.decoder.name;
      h.seed = job.seed;
      const auto& sp = plan_.decoder.sampling;
      h.cfg_scale = sp.cfg_scale;
      h.temperature = sp.temperature;
      h.top_k = double(sp.top_k);
      h.top_p = sp.top_p;
      h.options = job.distill;
      distill = std::make_unique<DistillUnitWriter>(distill_unit_path(job.out_dir, unit.id), h);
    }
    // Batches are cut from the unit's own samples, so their composition depends on (unit_size, batch_size)
    // only, never on which rank runs the unit: floating-point results (and, rarely, a sampled token) can
    // change with the batch, so this is what makes outputs identical for any rank count. A decoder that refills
    // rows takes the whole unit on batch_size rows (a row whose image is done takes the next sample); the
    // others take it in batches of batch_size. Images are made and written batch_size at a time either way.
    const int64_t span = decoder_.refills_rows() ? count : job.batch_size;
    for (int64_t first = 0; first < count; first += span) {
      if (stop_requested()) return std::nullopt;
      if (const int64_t ms = fault_value("slow"); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      const int64_t S = std::min(span, count - first);
      auto req = make_request_(&begin[first], S);
      req.rows = job.batch_size;
      const auto t_decode = Clock::now();
      nonfinite_watch::reset();
      const auto result = decode_in_rows(decoder_, req);
      if (stop_requested()) return std::nullopt;  // a decode that a stop cut short
      // A NaN or infinite logit would have been sampled as token 0, and a NaN latent searched to code 0: the
      // unit fails instead, with one line naming the model's files.
      const auto decoded = [&] {
        return fmt::format("unit {}, samples {}..{}", unit.id, begin[first].sample_id, begin[first + S - 1].sample_id);
      };
      VISPEC_CHECK(!nonfinite_watch::seen(nonfinite_watch::Source::kResamplers), decoded(),
                   ": MuLo-SD's resamplers' outputs are not finite (NaN or infinity) while decoding: a NaN in their "
                   "weights (",
                   plan_.model.mulo.resamplers_weights, ")?");
      VISPEC_CHECK(!nonfinite_watch::seen(nonfinite_watch::Source::kLogits), decoded(),
                   ": non-finite logits (NaN or infinity) while decoding; a NaN in the weights (",
                   logit_weights(plan_.model, plan_.decoder.drafters), "), an overflow in ", plan_.model.dtype,
                   ", or an extreme cfg_scale (", plan_.decoder.sampling.cfg_scale, ")");
      const double decode_ms_per_sample = seconds_since(t_decode) * 1e3 / double(S);
      for (int64_t start = first; start < first + S; start += job.batch_size) {
        const int64_t B = std::min(job.batch_size, first + S - start);
        const auto t_batch = Clock::now();
        const auto tokens = result.tokens.narrow(0, start - first, B);
        const auto images = models_.vq->decode_codes(tokens.to(device_), grid, grid);
        // Pixels and stored states are checked like the logits: a NaN there would be a black image or a
        // training row of NaNs, written and journaled as done. (The images are read to the host just below.)
        const auto samples = [&] {
          return fmt::format("unit {}, samples {}..{}", unit.id, begin[start].sample_id,
                             begin[start + B - 1].sample_id);
        };
        VISPEC_CHECK(torch::isfinite(images).all().item<bool>(), samples(),
                     ": the VQ decoder's pixels are not finite "
                     "(NaN or infinity): a NaN in its weights (",
                     plan_.model.vq_weights, ")?");
        if (distill) {
          std::vector<int64_t> index;
          for (int64_t i = start - first; i < start - first + B; ++i) index.push_back(i);
          const auto conditions = span == B ? req.conditions : req.conditions.select(index);
          const auto hidden = teacher_forced_hidden(models_.gpt, conditions, tokens, job.distill.streams);
          VISPEC_CHECK(torch::isfinite(hidden).all().item<bool>(), samples(),
                       ": the hidden states to distil are not "
                       "finite (NaN or infinity): a NaN in the GPT's weights or an overflow in ",
                       plan_.model.dtype);
          const std::vector<uint64_t> ids(req.sample_ids.begin() + (start - first),
                                          req.sample_ids.begin() + (start - first + B));
          distill->push(distill_batch(hidden, tokens, conditions, ids, job.distill.dtype));
        }
        const double batch_ms = seconds_since(t_batch) * 1e3;
        const auto bytes = images_to_bytes(images);  // [B, H, W, C]
        for (int64_t b = 0; b < B; ++b) {
          const auto& s = begin[start + b];
          const auto& st = result.stats[size_t(start - first + b)];
          if (fault_at("enospc", unit.id))
            VISPEC_FAIL(shard ? shard_path(job.out_dir, unit.id) : image_path(job.out_dir, s.sample_id),
                        ": write failed: No space left on device (VISPEC_FAULT)");
          const auto px = bytes[b];
          const auto png = encode_png(std::vector<uint8_t>(px.data_ptr<uint8_t>(), px.data_ptr<uint8_t>() + px.numel()),
                                      int(bytes.size(2)), int(bytes.size(1)), int(bytes.size(3)));
          const auto row = tokens[b].to(torch::kInt32).contiguous();
          const auto npy =
              encode_npy("<i4", row.data_ptr<int32_t>(), size_t(row.numel()) * sizeof(int32_t), {grid, grid});
          done.stats += st;
          auto line = sample_stats_json(st);
          line.update({{"sample_id", s.sample_id},
                       {"prompt", s.prompt},
                       {"class_id", s.class_id},
                       {"seed", job.seed},
                       {"decoder", job.decoder.name},
                       {"unit", unit.id},
                       {"wall_ms", decode_ms_per_sample + batch_ms / double(B)},
                       {"batch_size", req.row_count()}});
          if (shard) {  // WebDataset's grouping: every member of a sample is named <stem>.<extension>
            const auto stem = sample_stem(s.sample_id);
            shard->add(stem + ".png", png);
            shard->add(stem + ".tokens.npy", npy);
            shard->add(stem + ".json", line.dump() + "\n");
          } else {
            const auto png_file = image_path(job.out_dir, s.sample_id),
                       npy_file = tokens_path(job.out_dir, s.sample_id);
            done.files.push_back({relative(png_file), write_file_atomic(png_file, png, /*sync_directory=*/false)});
            done.files.push_back({relative(npy_file), write_file_atomic(npy_file, npy, /*sync_directory=*/false)});
          }
          if (start + b == count / 2) maybe_kill_at("kill-mid-unit", unit.id);
          metrics += line.dump() + "\n";
        }
        source_.progress(B);
      }
    }
    // The renames above are durable once their directories are; then the unit's metrics make it whole.
    if (distill) done.files.push_back({relative(distill_unit_path(job.out_dir, unit.id)), distill->finish()});
    if (shard) {
      done.files.push_back({relative(shard_path(job.out_dir, unit.id)), shard->commit(/*sync_directory=*/true)});
    } else {
      fsync_directory(job.out_dir + "/images");
      fsync_directory(job.out_dir + "/tokens");
    }
    const auto metrics_file = unit_metrics_path(job.out_dir, unit.id);
    done.files.push_back({relative(metrics_file), write_file_atomic(metrics_file, metrics)});
    done.images = count;
    done.seconds = seconds_since(t0);
    return done;
  }

 private:
  // OUT/images/00000042.png -> images/00000042.png, as the journal records it (OUT may move).
  std::string relative(const std::string& path) const { return path.substr(plan_.job.out_dir.size() + 1); }

  const JobPlan& plan_;
  LoadedModels& models_;
  Decoder& decoder_;
  torch::Device device_;
  RequestBuilder& make_request_;
  UnitSource& source_;
};
}  // namespace

std::unique_ptr<PreparedWorker> prepare_worker(const JobPlan& plan, const WorkerOptions& o) {
  const auto t0 = Clock::now();
  const auto traffic0 = weight_traffic();
  torch::NoGradGuard no_grad;
  auto w = std::make_unique<PreparedWorker>();
  // threads 0: LibTorch's default, capped at this rank's share of the node's cores so that N ranks on a
  // node do not each start a full set of OpenMP threads (oversubscribed OpenMP threads spin at barriers).
  w->threads = int(plan.job.threads);  // at most kMaxThreads
  if (w->threads == 0)
    w->threads = std::min(at::get_num_threads(),
                          std::max(1, int(std::thread::hardware_concurrency()) / std::max(1, o.local_size)));
  w->threads = set_threads(w->threads);  // the count used: at most the node's cores
  w->device = pick_device(plan.job.device, o.local_rank);
  // oneDNN's CPU convolutions pick their blocking from the batch size, the thread count and the CPU set the
  // process may use (mpirun binds ranks to cores), and a last-bit difference in the VQ decoder moves a pixel
  // across a rounding boundary now and then (measured: 1 of 18 images, mpirun vs plain). LibTorch's own
  // convolutions (im2col + BLAS) give the same bits whatever those are, at a small cost for the VQ decode.
  if (w->device.is_cpu()) at::globalContext().setUserEnabledMkldnn(false);
  set_cuda_graphs(plan.job.cuda_graphs != "off");  // read by the decoders' static steps
  w->models = load_models(plan.model, w->device);
  w->decoder =
      make_decoder(plan.decoder, load_decoder_models(plan.decoder, plan.model, w->models.gpt, w->models.vq, w->device));
  w->make_request = std::make_unique<RequestBuilder>(plan.model, plan.job.seed, w->device);
  const auto traffic = weight_traffic();
  w->load = {seconds_since(t0), traffic.read_bytes - traffic0.read_bytes,
             traffic.received_bytes - traffic0.received_bytes};
  // Where the work runs, per rank: the first thing to check when a GPU job runs slowly.
  spdlog::info("rank {}: {} on {}{} in {}{}, models ready in {:.2f} s", o.rank, w->decoder->name(), w->device.str(),
               w->device.is_cuda() ? " (" + device_model(w->device) + ")" : std::string(), plan.model.dtype,
               w->device.is_cuda() ? fmt::format(", CUDA graphs {}", plan.job.cuda_graphs)
                                   : fmt::format(", {} threads", w->threads),
               w->load.seconds);
  return w;
}

void run_worker(const JobPlan& plan, const WorkerOptions& o, PreparedWorker& w, UnitSource& source) {
  WorkerReport report;
  report.rank = o.rank;
  report.loaded = w.load;
  report.loaded->device = w.device.str();
  report.loaded->device_model = device_model(w.device);
  std::optional<WorkUnit> unit;
  try {
    torch::NoGradGuard no_grad;  // grad mode is per thread: rank 0 decodes in a thread of its own
    set_threads(w.threads);      // so is OpenMP's thread count
    UnitWriter writer(plan, w.models, *w.decoder, *w.make_request, w.device, source);
    for (;;) {
      const auto t_wait = Clock::now();
      unit = source.next(report);
      if (!unit) return;
      report = WorkerReport{};
      report.rank = o.rank;
      report.wait_seconds = seconds_since(t_wait);
      report.done = writer.run(*unit);
      report.stopping = !report.done;
    }
  } catch (const Error& e) {
    report.error = e.what();
    report.error_code = 2;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    report.error = "internal error: " + what.substr(0, what.find('\n'));
    report.error_code = 3;
  }
  report.done.reset();
  while (source.next(report)) {  // the coordinator answers a failed worker with stop
  }
}

}  // namespace vispec
