// vispec bench BENCH.yaml: decoders side by side on the same prompts and seeds (bench/bench_runner.h).
#include <filesystem>

#include "apps/commands.h"
#include "bench/bench_runner.h"

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

}  // namespace vispec
