#include "bench/step_cost.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench/bandwidth_floor.h"
#include "bench/kernel_profile.h"
#include "bench/shape_models.h"
#include "core/check.h"
#include "core/device.h"
#include "core/op_counter.h"
#include "decoding/ar.h"
#include "io/atomic_file.h"
#include "models/checkpoints/load.h"
#include "models/checkpoints/file_extras.h"
#include "models/model_config.h"
#include "models/gpt/step_graph.h"

namespace vispec {

namespace {
using Clock = std::chrono::steady_clock;

struct Case {
  std::string model, dtype;
  Gpt gpt;
};

// One step's device time by kernel: two profiled decodes of 8 and 8 + steps steps, their difference over
// `steps` (bench/kernel_profile.h). The 12 longest kernels by name, the totals and the time per kernel class.
nlohmann::json profile_steps(ArDecoder& decoder, const DecodeRequest& request, int64_t steps, bool cuda) {
  const auto profile = [&](int64_t limit) {
    decoder.set_step_limit(limit);
    return profile_kernels([&] { decoder.decode(request); }, cuda);
  };
  const int64_t base = 8;
  const auto longer = profile(base + steps);
  const auto kernels = per_step(longer, profile(base), steps);
  nlohmann::json top = nlohmann::json::array(), classes = nlohmann::json::object();
  double us = 0, calls = 0;
  for (const auto& k : kernels) {
    us += k.us;
    calls += k.calls;
    const auto kind = kernel_class(k.name);
    classes[kind] = classes.value(kind, 0.0) + k.us;
    if (top.size() < 12)
      top.push_back({{"name", k.name.substr(0, 200)}, {"class", kind}, {"calls", k.calls}, {"us", k.us}});
  }
  return {{"steps", steps},     {"device_kernels", cuda},
          {"us_per_step", us},  {"launches_per_step", calls},
          {"classes", classes}, {"top", top}};
}

// One row without its floor (filled in once the bandwidth is known).
nlohmann::json measure(const Case& c, int64_t batch, const std::string& mode, const StepCostOptions& o) {
  const auto& cfg = c.gpt->config();
  SamplingParams params;
  params.cfg_scale = o.cfg_scale;
  set_cuda_graphs(mode == "graphs");  // read when the decoder makes its step's graphs
  ArDecoder decoder(c.gpt, params);
  decoder.set_step_limit(o.max_steps);
  DecodeRequest request;
  request.conditions.class_ids = torch::arange(batch, torch::kInt64) % cfg.num_classes;
  for (int64_t b = 0; b < batch; ++b) request.sample_ids.push_back(uint64_t(b));
  const auto device = c.gpt->device();
  decoder.decode(request);  // warm-up: allocator, kernels' first launches
  synchronize_device(device);
  const auto t0 = Clock::now();
  const auto out = decoder.decode(request);  // returns after the tokens are on the host
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  // What the host dispatches per step (untimed: the hook costs time on every op): two decodes of 2 and 6
  // steps, whose difference is 4 steps of the first length bucket without the prefill (every step of a bucket
  // issues the same operators). A replayed graph dispatches none of its kernels.
  const auto count = [&](int64_t steps) {
    decoder.set_step_limit(steps);
    OpCounter counter;
    decoder.decode(request);
    return std::make_pair(counter.ops(), counter.conversions());
  };
  const auto [ops2, conversions2] = count(2);
  const auto [ops6, conversions6] = count(6);
  const auto kernels =
      o.profile_steps > 0 ? profile_steps(decoder, request, o.profile_steps, device.is_cuda()) : nlohmann::json();
  decoder.set_step_limit(o.max_steps);
  const int64_t N = cfg.image_tokens(), rows = params.guided() ? 2 * batch : batch;
  const int64_t timed = out.stats[0].tokens;  // the prefill's token and the steps after it
  const double kv = kv_bytes_per_step(cfg, rows, c.gpt->tok_embeddings->weight.element_size());
  const double weights = weight_bytes(c.gpt);
  return {{"model", c.model},
          {"layers", cfg.n_layer},
          {"tokens", N},
          {"dtype", c.dtype},
          {"batch", batch},
          {"rows", rows},
          {"ms_per_token", 1e3 * seconds / double(timed)},
          {"mode", mode},
          {"graphs_replayed", decoder.replayed_graphs()},
          {"tokens_timed", timed},
          {"weight_bytes", weights},
          {"kv_bytes_per_step", kv},
          {"ops_per_step", double(ops6 - ops2) / 4.0},
          {"conversions_per_step", double(conversions6 - conversions2) / 4.0},
          {"profile", kernels}};
}

// The profiled rows: per row its device time per step by kernel class, and its longest kernels.
std::string profile_markdown(const nlohmann::json& rows) {
  std::string s;
  for (const auto& x : rows) {
    const auto& p = x["profile"];
    if (p.is_null()) continue;
    if (s.empty())
      s = fmt::format(
          "\n## Device time per step, by kernel\n\nEach profiled row's kernels over {} steps (two "
          "profiled decodes of 8 and {} steps, their difference divided by {}; bench/kernel_profile.h). "
          "Classes: matmul (cuBLAS's and kernels/linear.cu's products), attention, vispec (the "
          "other kernels/), aten (LibTorch's other kernels), copy.{}\n",
          p["steps"].get<int64_t>(), 8 + p["steps"].get<int64_t>(), p["steps"].get<int64_t>(),
          p["device_kernels"].get<bool>() ? ""
                                          : " On a CPU these are ATen operators' CPU times, an operator "
                                            "called inside another counted in both.");
    std::string classes;
    for (const auto& [kind, us] : p["classes"].items())
      classes += fmt::format("{}{} {:.1f} us", classes.empty() ? "" : ", ", kind, us.get<double>());
    s += fmt::format(
        "\n**{}, {}, batch {}, {}**: {:.1f} us of device time in {:.1f} launches per step, the step "
        "{:.1f} us of wall time ({}).\n\n| kernel | class | launches / step | us / step |\n| --- | --- "
        "| ---: | ---: |\n",
        x["model"].get<std::string>(), x["dtype"].get<std::string>(), x["batch"].get<int64_t>(),
        x["mode"].get<std::string>(), p["us_per_step"].get<double>(), p["launches_per_step"].get<double>(),
        1e3 * x["ms_per_token"].get<double>(), classes);
    for (const auto& k : p["top"]) {
      auto name = k["name"].get<std::string>().substr(0, 110);
      for (auto& c : name)
        if (c == '|') c = '/';
      s += fmt::format("| `{}` | {} | {:.2f} | {:.2f} |\n", name, k["class"].get<std::string>(),
                       k["calls"].get<double>(), k["us"].get<double>());
    }
  }
  return s;
}

std::string markdown(const nlohmann::json& r) {
  std::string s = fmt::format(
      "Device {} ({}), {}; copy bandwidth {:.1f} GB/s (read + written). AR with CFG {} (batch B runs 2B rows), "
      "temperature 1; one timed decode after a warm-up ({}). eager: every operator launched by the host; graphs: "
      "each step replayed as a CUDA graph where one ran (the replayed column). ops and casts: the top-level ATen "
      "operators the host dispatches per step and the conversions among them (dtype casts, a kernel each), "
      "counted on untimed decodes; a replayed graph dispatches none. {}\n\n",
      r["device"].get<std::string>(), r["device_model"].get<std::string>(), r["software"].get<std::string>(),
      r["bandwidth_gb_s"].get<double>(), r["cfg_scale"].get<double>(), r["timed_note"].get<std::string>(),
      r["xl_note"].get<std::string>());
  s += "| model | layers | tokens | dtype | batch (rows) | mode | replayed | ops / step | casts / step | ms / token "
       "| weights read | KV read / step | floor ms | ratio |\n";
  s += "| --- | ---: | ---: | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& x : r["rows"])
    s += fmt::format(
        "| {} | {} | {} | {} | {} ({}) | {} | {} | {:.0f} | {:.0f} | {:.3f} | {:.1f} MB | {:.2f} MB | "
        "{:.4f} | {:.1f} |\n",
        x["model"].get<std::string>(), x["layers"].get<int64_t>(), x["tokens"].get<int64_t>(),
        x["dtype"].get<std::string>(), x["batch"].get<int64_t>(), x["rows"].get<int64_t>(),
        x["mode"].get<std::string>(), x["graphs_replayed"].get<bool>() ? "yes" : "no", x["ops_per_step"].get<double>(),
        x["conversions_per_step"].get<double>(), x["ms_per_token"].get<double>(), x["weight_bytes"].get<double>() / 1e6,
        x["kv_bytes_per_step"].get<double>() / 1e6, x["floor_ms"].get<double>(), x["ratio"].get<double>());
  s += profile_markdown(r["rows"]);
  return s;
}
}  // namespace

std::string run_step_cost(const StepCostOptions& o) {
  for (const auto& d : o.dtypes)
    VISPEC_CHECK(d == "fp32" || d == "bf16" || d == "fp16", "step-cost: unknown dtype '", d, "'");
  for (auto b : o.batches)
    VISPEC_CHECK(b >= 1 && b <= 1024, "step-cost: batch must be in [1, 1024] (auto only with --decoders)");
  for (const auto& m : o.modes)
    VISPEC_CHECK(m == "eager" || m == "graphs", "step-cost: unknown mode '", m, "' (eager, graphs)");
  VISPEC_CHECK(o.max_steps >= 0, "step-cost: --max-steps must be >= 0");
  VISPEC_CHECK(o.profile_steps >= 0 && o.profile_steps <= 48, "step-cost: --profile-steps must be in [0, 48]");
  const auto model = load_model_config(o.model_config);
  set_threads(o.threads);
  const auto device = pick_device(o.device);
  torch::NoGradGuard no_grad;
  auto modes = o.modes;
  if (modes.empty())
    modes = device.is_cuda() ? std::vector<std::string>{"eager", "graphs"} : std::vector<std::string>{"eager"};
  const auto shape = measured_shape(o.xl_preset, o.xl_layers, o.xl_grid, o.xl_vocab, device.is_cuda());
  const std::string xl_note =
      shape.real() ? fmt::format("{}: LlamaGen's shape ({}), random weights.", shape.preset, shape.describe())
                   : fmt::format("{}: {}, not LlamaGen's whole shape, random weights.", shape.preset, shape.describe());
  double bandwidth = copy_bandwidth(device);  // measured again at the end: the better of the two counts
  spdlog::info("step-cost on {} ({}): copy bandwidth {:.1f} GB/s", device.str(), device_model(device), bandwidth / 1e9);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& dtype : o.dtypes) {
    const auto options = torch::TensorOptions().device(device).dtype(model_dtype(dtype));
    std::vector<Case> cases;
    cases.push_back({"embedded (" + model.name + ")", dtype, Gpt(model.gpt, options, /*random_init=*/false)});
    load_weights(*cases.back().gpt, model.gpt_weights, kGptFileExtras, model.gpt_keys);
    cases.push_back({shape.preset + " shape", dtype, random_target(shape, options)});
    for (auto& c : cases) {
      c.gpt->eval();
      for (auto batch : o.batches)
        for (const auto& mode : modes) {
          rows.push_back(measure(c, batch, mode, o));
          const auto& r = rows.back();
          spdlog::info("{} {} batch {} {}{}: {:.3f} ms/token", c.model, dtype, batch, mode,
                       r["graphs_replayed"].get<bool>() ? " (replayed)" : "", r["ms_per_token"].get<double>());
        }
    }
  }
  // A shared machine's bandwidth varies from minute to minute: the floor uses the better of two measurements.
  bandwidth = std::max(bandwidth, copy_bandwidth(device));
  for (auto& r : rows) {
    r["floor_ms"] = 1e3 * (r["weight_bytes"].get<double>() + r["kv_bytes_per_step"].get<double>()) / bandwidth;
    r["ratio"] = r["ms_per_token"].get<double>() / r["floor_ms"].get<double>();
  }
  const nlohmann::json result = {{"device", device.str()},
                                 {"device_model", device_model(device)},
                                 {"software", software_versions()},
                                 {"threads", at::get_num_threads()},
                                 {"bandwidth_gb_s", bandwidth / 1e9},
                                 {"cfg_scale", o.cfg_scale},
                                 {"xl_note", xl_note},
                                 {"max_steps", o.max_steps},
                                 {"timed_note", o.max_steps > 0 ? fmt::format("the first {} steps after the prefill "
                                                                              "of each image, not a whole image",
                                                                              o.max_steps)
                                                                : std::string("a whole image")},
                                 {"rows", rows}};
  const std::string name = o.name.empty() ? (device.is_cuda() ? "step-cost-cuda" : "step-cost-cpu") : o.name;
  std::filesystem::create_directories(o.results_dir);
  const auto json_path = o.results_dir + "/" + name + ".json";
  write_file_atomic(json_path, result.dump(2) + "\n");
  write_file_atomic(o.results_dir + "/" + name + ".md", markdown(result));
  spdlog::info("wrote {} and {}.md", json_path, name);
  return json_path;
}

}  // namespace vispec
