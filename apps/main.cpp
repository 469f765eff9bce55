// vispec: autoregressive image generation with speculative decoders, at cluster scale.
// main() only parses the command line, runs the chosen command and turns errors into exit codes.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>

#include "apps/commands.h"
#include "core/exit_codes.h"
#include "core/check.h"
#include "core/logging.h"

int main(int argc, char** argv) {
  CLI::App app{"vispec: fast autoregressive image generation (speculative decoding, MPI batch jobs)"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug, info, warn or error")->capture_default_str();
  vispec::Action action;
  vispec::add_run_command(app, action);
  vispec::add_train_commands(app, action);
  vispec::add_grid_command(app, action);
  vispec::add_decoders_command(app, action);
  vispec::add_eval_commands(app, action);
  vispec::add_bench_command(app, action);
  vispec::add_step_cost_command(app, action);
  vispec::add_distill_commands(app, action);
  vispec::add_verify_command(app, action);
  vispec::add_export_command(app, action);
  vispec::add_bench_plot_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help: the help text, exit 0
    // A bad command line is bad input like any other: one line with the prefix, exit 2 (CLI11's own codes,
    // 105 to 109, are not the documented contract).
    std::cerr << ("vispec: error: " + std::string(e.what()) + " (vispec --help, or --help after the command)\n")
              << std::flush;
    return vispec::kExitUserError;
  }
  vispec::init_logging(log_level);
  // HDF5 would look for the unit files of a distillation index under this prefix instead of beside the index,
  // that is, read files outside the run's directory: vispec's indexes always map the files beside them.
  if (const char* prefix = std::getenv("HDF5_VDS_PREFIX")) {
    spdlog::warn("HDF5_VDS_PREFIX={} is ignored: a distillation index maps the unit files beside it", prefix);
    ::unsetenv("HDF5_VDS_PREFIX");
  }
  try {
    return action();
  } catch (const vispec::Error& e) {
    std::cerr << ("vispec: error: " + std::string(e.what()) + "\n") << std::flush;  // one write (mpirun forwards each)
    return vispec::kExitUserError;
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::cerr << ("vispec: internal error: " + what.substr(0, what.find('\n')) + "\n") << std::flush;
    return vispec::kExitInternalError;
  }
}
