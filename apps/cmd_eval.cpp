// vispec eval OUT: class agreement and FID of a run's images.  vispec eval-floors: FID's reference points.
#include <iostream>

#include "apps/commands.h"
#include "core/device.h"
#include "eval/run_eval.h"

namespace vispec {

void add_eval_commands(CLI::App& app, Action& action) {
  static RunEvalOptions o;
  auto* cmd = app.add_subcommand("eval", "class agreement and FID of a run's images (writes OUT/eval.json)");
  cmd->add_option("out", o.out_dir, "the run's output directory")->required();
  cmd->add_option("--config", o.model_config, "model config (default: the one OUT/summary.json names)");
  cmd->add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", o.threads, "CPU threads (0 = LibTorch default)")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxThreads));
  cmd->callback([&action] {
    action = [] {
      std::cout << "eval " << o.out_dir << ": " << evaluate_run(o).to_line() << std::endl;
      return kExitOk;
    };
  });

  static std::string config, results = "bench/results";
  static std::vector<int64_t> sizes = {1000, 10000};
  auto* floors =
      app.add_subcommand("eval-floors", "FID of real train images and of their VQ reconstructions vs the test images");
  floors->add_option("--config", config, "model config")->required();
  floors->add_option("--n", sizes, "image counts to measure at")->capture_default_str();
  floors->add_option("--results", results, "writes floors.json and floors.md here")->capture_default_str();
  floors->add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  floors->add_option("--threads", o.threads, "CPU threads (0 = LibTorch default)")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxThreads));
  floors->callback([&action] {
    action = [] {
      measure_floors(config, sizes, results, o.device, o.threads);
      return kExitOk;
    };
  });
}

}  // namespace vispec
