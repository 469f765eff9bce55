// vispec grid OUT: a contact sheet of a run's images, one row per prompt.
#include "apps/commands.h"
#include "workers/sample_grid.h"

namespace vispec {

void add_grid_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("grid", "write a contact sheet of a run's images (one row per prompt)");
  static std::string run_dir, png = "";
  static int per_row = 8, scale = 3;
  cmd->add_option("run", run_dir, "a run's output directory")->required();
  cmd->add_option("--png", png, "where to write the sheet (default RUN/grid.png)");
  cmd->add_option("--per-row", per_row, "images per row")->capture_default_str();
  cmd->add_option("--scale", scale, "nearest-neighbour upscaling")->capture_default_str();
  cmd->callback([&action] {
    action = [] {
      write_sample_grid(run_dir, png.empty() ? run_dir + "/grid.png" : png, per_row, scale);
      return kExitOk;
    };
  });
}

}  // namespace vispec
