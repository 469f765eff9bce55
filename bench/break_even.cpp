#include "bench/break_even.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>

#include "bench/bandwidth_floor.h"
#include "bench/shape_models.h"
#include "core/check.h"
#include "core/device.h"
#include "core/op_counter.h"
#include "decoding/common/decoder_registry.h"
#include "io/atomic_file.h"
#include "models/checkpoints/load.h"
#include "models/gpt/step_graph.h"
#include "workers/batch_memory.h"
#include "workers/loaded_models.h"

namespace vispec {

namespace {
using Clock = std::chrono::steady_clock;

// AR first (every row is measured against it), then the others in the order asked; "all": every registered one.
std::vector<std::string> decoder_names(const std::vector<std::string>& asked) {
  std::vector<std::string> names{"ar"};
  const auto known = known_decoders();
  for (const auto& name : asked) {
    if (name == "all") {
      for (const auto& k : known)
        if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
      continue;
    }
    VISPEC_CHECK(std::find(known.begin(), known.end(), name) != known.end(), "step-cost --decoders: unknown decoder '",
                 name, "' (known: all, ", fmt::format("{}", fmt::join(known, ", ")), ")");
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// The decoder at its paper defaults with the sampling of every row: CFG, temperature 1, no top-k or top-p.
DecoderConfig config_of(const std::string& name, double cfg_scale) {
  DecoderSpec spec;
  spec.name = name;
  spec.name_where = "step-cost --decoders: " + name;
  spec.params = {{"cfg_scale", cfg_scale}, {"temperature", 1.0}, {"top_k", 0.0}, {"top_p", 1.0}};
  return parse_decoder(spec);
}

// The decoder's own fields, for the table: its identity less the sampling every row shares and the keys of
// rules other than its own.
std::string settings_of(const DecoderConfig& c) {
  const auto shown = [&](const std::string& key) {
    if (key == "cfg_scale" || key == "temperature" || key == "top_k" || key == "top_p") return false;
    return !c.takes_rule || !is_rule_key(key) || rule_reads(c.accept.rule, key);
  };
  std::string s;
  for (const auto& [key, value] : c.numbers)
    if (shown(key)) s += fmt::format("{}{} {:g}", s.empty() ? "" : ", ", key, value);
  for (const auto& [key, value] : c.words)
    if (shown(key)) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", key, value);
  return s;
}

DecodeRequest request_of(int64_t count, int64_t num_classes) {
  DecodeRequest r;
  r.conditions.class_ids = torch::arange(count, torch::kInt64) % num_classes;
  for (int64_t b = 0; b < count; ++b) r.sample_ids.push_back(uint64_t(b));
  return r;
}

// `auto`: the largest batch whose AR caches and activations at the shape fit the device's free memory now (the
// target's weights already in place), as `batch_size: auto` plans a job's (workers/batch_memory.h).
int64_t auto_batch(const Gpt& target, bool guided, torch::Device device, int64_t limit) {
  const auto element = target->tok_embeddings->weight.element_size();
  const auto memory = gpt_batch_memory(target->config(), int64_t(element), guided ? 2 : 1);
  const int64_t fits = largest_batch(memory, free_device_memory(device));
  spdlog::info("batch auto: {} rows fit ({} bytes per row), at most {}", fits, memory.per_row(), limit);
  return std::clamp<int64_t>(fits, 1, limit);
}

// The tokens committed per target forward of the decoder on the embedded model: per row over every sample, and
// per batch of each size in `batches` (the samples in order cut into chunks of it, each chunk's rows waiting for
// its slowest: its rows' tokens over its size times its largest count of target forwards).
nlohmann::json embedded_mal(const DecoderConfig& config, const ModelConfig& model, const LoadedModels& loaded,
                            const std::vector<int64_t>& batches, int64_t samples, torch::Device device) {
  auto decoder = make_decoder(config, load_decoder_models(config, model, loaded.gpt, loaded.vq, device));
  OpCounter counter;  // eager: what each iteration launches besides its forwards (core/op_counter.h)
  const auto result = decoder->decode(request_of(samples, model.gpt.num_classes));
  int64_t tokens = 0, forwards = 0;
  for (const auto& s : result.stats) {
    tokens += s.tokens;
    forwards += s.target_forwards;
  }
  nlohmann::json per_batch = nlohmann::json::object();
  for (auto b : batches) {
    int64_t waited = 0;
    for (int64_t start = 0; start < samples; start += b) {
      const int64_t end = std::min(samples, start + b);
      int64_t slowest = 0;
      for (int64_t i = start; i < end; ++i) slowest = std::max(slowest, result.stats[size_t(i)].target_forwards);
      waited += (end - start) * slowest;
    }
    per_batch[std::to_string(b)] = double(tokens) / double(waited);
  }
  const auto iterations = counter.iterations();
  // What those operators are: the most frequent eight, per iteration (where a cut must come from).
  nlohmann::json by_name = nlohmann::json::array();
  for (const auto& [name, count] : counter.iteration_kernel_ops_by_name()) {
    if (by_name.size() == 8 || iterations == 0) break;
    by_name.push_back({{"op", name}, {"per_iteration", double(count) / double(iterations)}});
  }
  return {{"row", double(tokens) / double(forwards)},
          {"batch", per_batch},
          {"kernel_ops_per_iteration",
           iterations > 0 ? nlohmann::json(double(counter.iteration_kernel_ops()) / double(iterations)) : nullptr},
          {"kernel_ops_by_name", by_name}};
}

// One decoder at one batch on the shape: a warm-up decode, then a timed one.
nlohmann::json time_decoder(Decoder& decoder, int64_t batch, int64_t num_classes, torch::Device device) {
  const auto request = request_of(batch, num_classes);
  decoder.decode(request);  // warm-up: graphs captured and checked, the allocator's pools, first launches
  synchronize_device(device);
  const auto t0 = Clock::now();
  const auto result = decoder.decode(request);  // returns after the tokens are on the host
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  int64_t iterations = 0, tokens = 0, forwards = 0;
  for (const auto& s : result.stats) {
    iterations = std::max(iterations, s.target_forwards);
    tokens += s.tokens;
    forwards += s.target_forwards;
  }
  return {{"seconds", seconds},
          {"iterations", iterations},
          {"ms_per_iteration", 1e3 * seconds / double(iterations)},
          {"mal_random", double(tokens) / double(forwards)}};
}

std::string markdown(const nlohmann::json& r) {
  std::string s = fmt::format(
      "Device {} ({}), {}, {} CPU threads. Break-even table: {}, random weights (the target and the drafters a "
      "user would train or load for it, bench/shape_models.h). Sampling: CFG {} (batch B runs 2B rows), temperature "
      "1, no top-k or top-p; every decoder at its paper defaults (its settings). Timed: one decode of whole images "
      "after a warm-up, {}; an iteration's time is the batch's time over its iterations (its slowest row's target "
      "forwards, the prefill included, as AR's step is the image's time over its tokens). **break-even MAL** = "
      "iteration / AR step, at the same dtype and batch: the decoder beats AR exactly where its mean accepted "
      "length exceeds it. **MAL (embedded)**: the same decoder on the embedded model ({}, trained weights) at the "
      "same settings over {} samples, per row and per batch of the row's size (a batch iterates until its slowest "
      "row is done). **Projected speedup** = embedded batch MAL / break-even MAL: projected, the embedded model's "
      "acceptance carried over to this shape's costs. Random weights accept at their own rate (iterations per "
      "image, here). **Kernel ops**: the operators each iteration launches besides its forwards, counted on the "
      "embedded model's eager decode (core/op_counter.h; a GPU replays them inside the iteration's graph).\n\n",
      r["device"].get<std::string>(), r["device_model"].get<std::string>(), r["software"].get<std::string>(),
      r["threads"].get<int64_t>(), r["shape"].get<std::string>(), r["cfg_scale"].get<double>(),
      r["graphs"].get<bool>() ? "each iteration replayed as CUDA graphs where the decoder has them"
                              : "eagerly (no CUDA graphs on a CPU)",
      r["embedded_model"].get<std::string>(), r["mal_samples"].get<int64_t>());
  s += "| dtype | batch | decoder | settings | ms / iteration | AR ms / step | break-even MAL | iterations / image "
       "(random) | MAL embedded (row / batch) | projected speedup | kernel ops / iteration besides forwards |\n";
  s += "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& x : r["rows"]) {
    const auto head = fmt::format("| {} | {} | {} | {} |", x["dtype"].get<std::string>(), x["batch"].get<int64_t>(),
                                  x["decoder"].get<std::string>(), x["settings"].get<std::string>());
    if (x.contains("error")) {
      s += head + fmt::format(" failed: {} | | | | | | |\n", x["error"].get<std::string>());
      continue;
    }
    const auto& ops = x["kernel_ops_per_iteration"];
    s += head + fmt::format(" {:.3f} | {:.3f} | **{:.2f}** | {} | {:.2f} / {:.2f} | {:.2f}x | {} |\n",
                            x["ms_per_iteration"].get<double>(), x["ar_ms_per_step"].get<double>(),
                            x["break_even_mal"].get<double>(), x["iterations"].get<int64_t>(),
                            x["embedded_mal"].get<double>(), x["embedded_batch_mal"].get<double>(),
                            x["projected_speedup"].get<double>(),
                            ops.is_null() ? std::string("-") : fmt::format("{:.0f}", ops.get<double>()));
  }
  // Throughput: images per second, AR's against its floor, the others projected.
  s += fmt::format(
      "\nImages per second: the batch's images over its decode's time (`auto`: the largest batch AR's caches and "
      "activations fit in, workers/batch_memory.h). AR's beside its floor (every step reads the weights and the KV "
      "cache at its length, at the copy bandwidth {}); the speculative decoders' projected (AR's x the projected "
      "speedup) and as measured with random weights, which accept at their own rate.\n\n",
      r.contains("bandwidth_gb_s") ? fmt::format("{:.1f} GB/s", r["bandwidth_gb_s"].get<double>())
                                   : std::string("measured at the end"));
  s += "| dtype | batch | decoder | images/s projected | images/s measured (random weights) | AR's floor images/s | "
       "of the floor |\n| --- | ---: | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& x : r["rows"]) {
    if (x.contains("error")) continue;
    const bool floor = x.contains("of_floor");
    s += fmt::format("| {} | {}{} | {} | {:.2f} | {:.2f} | {} | {} |\n", x["dtype"].get<std::string>(),
                     x["batch"].get<int64_t>(), x.value("batch_auto", false) ? " (auto)" : "",
                     x["decoder"].get<std::string>(), x["projected_images_per_s"].get<double>(),
                     x["images_per_s"].get<double>(),
                     floor ? fmt::format("{:.2f}", x["floor_images_per_s"].get<double>()) : std::string("-"),
                     floor ? fmt::format("{:.2f}", x["of_floor"].get<double>()) : std::string("-"));
  }
  // Once per decoder: what its kernel ops are.
  std::string named;
  std::set<std::string> seen;
  for (const auto& x : r["rows"]) {
    const auto decoder = x["decoder"].get<std::string>();
    if (!x.contains("kernel_ops_by_name") || x["kernel_ops_by_name"].empty() || !seen.insert(decoder).second) continue;
    named += "- " + decoder + ":";
    for (const auto& op : x["kernel_ops_by_name"])
      named += fmt::format(" {} {:.1f},", op["op"].get<std::string>(), op["per_iteration"].get<double>());
    named.back() = '\n';
  }
  if (!named.empty())
    s += "\nThe kernel ops per iteration by operator, the most frequent eight (embedded model, eager):\n\n" + named;
  return s;
}
}  // namespace

std::string run_break_even(const StepCostOptions& o) {
  for (const auto& d : o.dtypes)
    VISPEC_CHECK(d == "fp32" || d == "bf16" || d == "fp16", "step-cost: unknown dtype '", d, "'");
  VISPEC_CHECK(!o.batches.empty(), "step-cost: no batch sizes");
  for (auto b : o.batches) VISPEC_CHECK(b >= 0 && b <= 1024, "step-cost: batch must be in [1, 1024] or auto");
  VISPEC_CHECK(o.auto_batch_limit >= 1 && o.auto_batch_limit <= 1024,
               "step-cost: --auto-batch-limit must be in [1, 1024]");
  VISPEC_CHECK(o.mal_samples >= 1 && o.mal_samples <= 256, "step-cost: --mal-samples must be in [1, 256]");
  const auto names = decoder_names(o.decoders);
  std::vector<DecoderConfig> configs;
  for (const auto& name : names) configs.push_back(config_of(name, o.cfg_scale));
  auto model = load_model_config(o.model_config);
  set_threads(o.threads);
  const auto device = pick_device(o.device);
  torch::NoGradGuard no_grad;
  const auto dtypes = o.dtypes.empty() ? std::vector<std::string>{device.is_cuda() ? "bf16" : "fp32"} : o.dtypes;
  const auto shape = measured_shape(o.xl_preset, o.xl_layers, o.xl_grid, o.xl_vocab, device.is_cuda());
  const int64_t N = shape.target().image_tokens();

  nlohmann::json result = {{"device", device.str()},
                           {"device_model", device_model(device)},
                           {"software", software_versions()},
                           {"threads", at::get_num_threads()},
                           {"shape", shape.describe()},
                           {"shape_real", shape.real()},
                           {"tokens", N},
                           {"cfg_scale", o.cfg_scale},
                           {"graphs", device.is_cuda()},
                           {"embedded_model", model.name},
                           {"mal_samples", o.mal_samples},
                           {"rows", nlohmann::json::array()}};
  const std::string name = o.name.empty() ? (device.is_cuda() ? "break-even-cuda" : "break-even-cpu") : o.name;
  std::filesystem::create_directories(o.results_dir);
  const auto json_path = o.results_dir + "/" + name + ".json";
  const auto write = [&] {
    write_file_atomic(json_path, result.dump(2) + "\n");
    write_file_atomic(o.results_dir + "/" + name + ".md", markdown(result));
  };
  spdlog::info("step-cost --decoders on {} ({}): {}; {}", device.str(), device_model(device), shape.describe(),
               fmt::format("{}", fmt::join(names, ", ")));
  // The floor of AR's images per second: bandwidth measured at the start and the end, the better of the two (a
  // shared machine's varies from minute to minute), the rows' floors filled in at the end.
  double bandwidth = copy_bandwidth(device);
  const bool guided = o.cfg_scale > 1.0;
  int failures = 0;
  for (const auto& dtype : dtypes) {
    // The shape: the target first (an `auto` batch is what fits beside it), every decoder's networks made once,
    // each decoder made afresh per batch (its graphs go with it).
    set_cuda_graphs(true);  // read when a decoder makes its graphs; a CPU makes none
    const auto options = torch::TensorOptions().device(device).dtype(model_dtype(dtype));
    const auto target = random_target(shape, options);
    std::vector<int64_t> batches;
    for (auto b : o.batches) batches.push_back(b == 0 ? auto_batch(target, guided, device, o.auto_batch_limit) : b);
    // The MALs of the projection, on the embedded model. Counts only: eager (a sample's tokens are the same).
    set_cuda_graphs(false);
    std::map<std::string, nlohmann::json> mals;
    {
      model.dtype = dtype;
      const auto loaded = load_models(model, device);
      for (const auto& c : configs) {
        mals[c.name] = embedded_mal(c, model, loaded, batches, o.mal_samples, device);
        spdlog::info("{} {}: MAL {:.2f} per row on the embedded model", dtype, c.name,
                     mals[c.name]["row"].get<double>());
      }
    }
    set_cuda_graphs(true);
    ShapeCodebook codebook;
    std::vector<DecoderModels> networks;
    for (const auto& c : configs) networks.push_back(random_decoder_models(c, shape, target, codebook));
    const auto classes = target->config().num_classes;
    const double weights = weight_bytes(target);
    for (size_t bi = 0; bi < batches.size(); ++bi) {
      const int64_t batch = batches[bi];
      double ar_ms = 0, ar_images_per_s = 0;
      bool ar_fits = true;
      for (size_t d = 0; d < configs.size(); ++d) {
        const auto& c = configs[d];
        const auto& mal = mals[c.name];
        nlohmann::json row = {{"dtype", dtype},
                              {"batch", batch},
                              {"batch_auto", o.batches[bi] == 0},
                              {"rows", c.sampling.guided() ? 2 * batch : batch},
                              {"decoder", c.name},
                              {"settings", settings_of(c)},
                              {"embedded_mal", mal["row"]},
                              {"embedded_batch_mal", mal["batch"][std::to_string(batch)]},
                              {"kernel_ops_per_iteration", mal["kernel_ops_per_iteration"]},
                              {"kernel_ops_by_name", mal["kernel_ops_by_name"]}};
        try {
          // A batch AR cannot hold is no failure, only a batch too large for this card: its row says so.
          VISPEC_CHECK(ar_fits, "AR does not fit at this batch");
          auto decoder = make_decoder(c, networks[d]);
          row.update(time_decoder(*decoder, batch, classes, device));
          row["images_per_s"] = double(batch) / row["seconds"].get<double>();
          if (c.name == "ar") {
            ar_ms = row["ms_per_iteration"].get<double>();
            ar_images_per_s = row["images_per_s"].get<double>();
            row["weight_bytes"] = weights;
            row["kv_bytes_per_step"] =
                kv_bytes_per_step(target->config(), row["rows"].get<int64_t>(), options.dtype().itemsize());
          }
          VISPEC_CHECK(ar_ms > 0, "AR failed at this batch: no step to measure against");
          row["ar_ms_per_step"] = ar_ms;
          row["break_even_mal"] = row["ms_per_iteration"].get<double>() / ar_ms;
          row["projected_speedup"] = row["embedded_batch_mal"].get<double>() / row["break_even_mal"].get<double>();
          row["projected_images_per_s"] = ar_images_per_s * row["projected_speedup"].get<double>();
          spdlog::info(
              "{} batch {} {}: {:.3f} ms per iteration, AR {:.3f} ms per step: break-even MAL {:.2f}, "
              "projected {:.2f}x ({:.2f} images/s)",
              dtype, batch, c.name, row["ms_per_iteration"].get<double>(), ar_ms, row["break_even_mal"].get<double>(),
              row["projected_speedup"].get<double>(), row["projected_images_per_s"].get<double>());
        } catch (const c10::OutOfMemoryError&) {
          row["error"] = "out of memory at this batch";
          row["fits"] = false;
          if (c.name == "ar") ar_fits = false;
          spdlog::warn("{} batch {} {}: out of memory", dtype, batch, c.name);
        } catch (const std::exception& e) {  // one decoder's failure keeps the others' rows; the run then fails
          const bool too_large = !ar_fits;
          if (!too_large) ++failures;
          row["error"] = std::string(e.what()).substr(0, 300);
          if (too_large) row["fits"] = false;
          spdlog::error("{} batch {} {}: {}", dtype, batch, c.name, row["error"].get<std::string>());
        }
        result["rows"].push_back(row);
        write();
      }
    }
  }
  bandwidth = std::max(bandwidth, copy_bandwidth(device));
  result["bandwidth_gb_s"] = bandwidth / 1e9;
  for (auto& r : result["rows"]) {
    if (!r.contains("kv_bytes_per_step") || !r.contains("images_per_s")) continue;
    // AR's images per second at the floor: every step reads the weights and the KV cache at its length.
    const double step_s = (r["weight_bytes"].get<double>() + r["kv_bytes_per_step"].get<double>()) / bandwidth;
    r["floor_images_per_s"] = double(r["batch"].get<int64_t>()) / (double(N) * step_s);
    r["of_floor"] = r["images_per_s"].get<double>() / r["floor_images_per_s"].get<double>();
  }
  write();
  spdlog::info("wrote {} and {}.md", json_path, name);
  VISPEC_CHECK(failures == 0, "step-cost --decoders: ", failures, " rows failed (", json_path, " says why)");
  return json_path;
}

}  // namespace vispec
