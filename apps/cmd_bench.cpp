// vispec bench BENCH.yaml: decoders side by side on the same prompts and seeds (bench/bench_runner.h).
// vispec bench-plot RESULTS.json: its pictures again (bench/bench_plot.h).
// vispec step-cost: AR time per token against the memory-bandwidth floor (bench/step_cost.h); with --decoders,
// every decoder's iteration against AR's step: the break-even table (bench/break_even.h).
#include <filesystem>
#include <map>
#include <string>

#include "apps/commands.h"
#include "core/device.h"
#include "bench/bench_plot.h"
#include "bench/break_even.h"
#include "bench/bench_runner.h"
#include "core/check.h"
#include "io/atomic_file.h"
#include "bench/step_cost.h"

namespace vispec {

void add_bench_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("bench", "run decoders side by side; write results JSON, markdown and plot");
  static std::string file, results;
  static std::vector<std::string> sets;
  cmd->add_option("bench", file, "bench file (YAML)")->required();
  cmd->add_option("--results", results, "results directory (default: results/ beside the bench file)");
  cmd->add_option("--set", sets, "override a bench field: key.path=value (repeatable)")->allow_extra_args(false);
  cmd->callback([&action] {
    action = [] {
      const auto config = load_bench_config(file, sets);  // every check before any work
      const auto dir = results.empty()
                           ? (std::filesystem::path(file).parent_path() / "results").lexically_normal().string()
                           : results;
      run_bench(config, dir.empty() ? "results" : dir);
      return kExitOk;
    };
  });
}

void add_bench_plot_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("bench-plot", "redraw a recorded bench's pictures from its results JSON");
  static std::string json_path;
  cmd->add_option("results", json_path, "RESULTS/<name>.json of vispec bench")->required()->check(CLI::ExistingFile);
  cmd->callback([&action] {
    action = [] {
      nlohmann::json r;
      try {
        r = nlohmann::json::parse(read_file(json_path));
      } catch (const nlohmann::json::exception& e) {
        VISPEC_FAIL(json_path, ": not a bench's results (", e.what(), ")");
      }
      VISPEC_CHECK(r.is_object() && r.contains("decoders") && r.contains("name"), json_path,
                   ": not a bench's results (no 'decoders' or 'name')");
      std::string stem = json_path;  // RESULTS/<name>.json -> RESULTS/<name>
      if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
      write_bench_plots(r, stem);
      return kExitOk;
    };
  });
}

void add_step_cost_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("step-cost", "AR ms per token beside the memory-bandwidth floor (bench/step_cost.h)");
  static StepCostOptions o;
  cmd->add_option("--model", o.model_config, "model config of the embedded model")->capture_default_str();
  cmd->add_option("--device", o.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  cmd->add_option("--dtypes", o.dtypes, "fp32, bf16, fp16")->delimiter(',')->capture_default_str();
  cmd->add_option("--batches", o.batches, "batch sizes (CFG doubles the rows); with --decoders also auto")
      ->delimiter(',')
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"auto", "0"}}))
      ->capture_default_str();
  cmd->add_option("--modes", o.modes,
                  "eager, graphs (CUDA graphs of the static step); default: both on a GPU, eager on a CPU")
      ->delimiter(',');
  cmd->add_option("--max-steps", o.max_steps, "time only the first N steps of each image (0: the whole image)")
      ->capture_default_str();
  cmd->add_option("--profile-steps", o.profile_steps,
                  "also list each row's device time per step by kernel, over this many steps (0: no profile)")
      ->capture_default_str()
      ->check(CLI::Range(0, 48));
  cmd->add_option("--threads", o.threads, "CPU threads, 0 = LibTorch's default")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxThreads));
  cmd->add_option("--xl-layers", o.xl_layers, "GPT-XL layers (0: 36 on a GPU, 4 on a CPU)")->capture_default_str();
  cmd->add_option("--xl-grid", o.xl_grid, "GPT-XL grid side (0: 24 on a GPU, 8 on a CPU)")->capture_default_str();
  cmd->add_option("--xl-preset", o.xl_preset, "the shape's widths: a GPT preset (GPT-B .. GPT-7B)")
      ->capture_default_str();
  cmd->add_option("--xl-vocab", o.xl_vocab, "the shape's vocabulary")->capture_default_str();
  auto* dtypes = cmd->get_option("--dtypes");
  auto* batches = cmd->get_option("--batches");
  cmd->add_option("--decoders", o.decoders,
                  "the break-even table instead (bench/break_even.h): these decoders, or all, each against AR; "
                  "dtypes default to bf16 on a GPU, fp32 on a CPU, batches to 1, 8 and 32")
      ->delimiter(',');
  cmd->add_option("--mal-samples", o.mal_samples,
                  "with --decoders: samples of the embedded model whose mean accepted lengths the projection uses")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--auto-batch-limit", o.auto_batch_limit,
                  "with --decoders: the most rows batch auto takes (the largest batch that fits, at most this)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--results", o.results_dir, "directory for NAME.json and NAME.md")->capture_default_str();
  cmd->add_option("--name", o.name, "results name (default step-cost-DEVICE, with --decoders break-even-DEVICE)");
  cmd->callback([&action, dtypes, batches] {
    action = [dtypes, batches] {
      if (!o.decoders.empty()) {
        if (dtypes->count() == 0) o.dtypes.clear();  // the device's own: bf16 on a GPU, fp32 on a CPU
        if (batches->count() == 0) o.batches = {1, 8, 32};
        run_break_even(o);
        return kExitOk;
      }
      run_step_cost(o);
      return kExitOk;
    };
  });
}

}  // namespace vispec
