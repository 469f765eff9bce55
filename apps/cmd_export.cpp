// vispec export OUT --npz FILE: a run's images as the ADM evaluator's .npz (workers/sample_export.h).
#include <iostream>

#include "apps/commands.h"
#include "scheduler/journal.h"
#include "workers/sample_export.h"

namespace vispec {

void add_export_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("export",
                                 "write a run's images as one .npz (uint8 [N, H, W, 3], key arr_0), the "
                                 "sample file of the ADM evaluator's FID");
  static std::string run_dir, npz;
  cmd->add_option("run", run_dir, "a run's output directory")->required();
  cmd->add_option("--npz", npz, "the .npz to write")->required();
  cmd->callback([&action] {
    action = [] {
      require_run_directory(run_dir);  // what it reads back is a run's own files
      const auto n = export_samples_npz(run_dir, npz);
      std::cout << "export " << run_dir << ": " << n << " images -> " << npz << std::endl;
      return kExitOk;
    };
  });
}

}  // namespace vispec
