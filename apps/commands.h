// The vispec subcommands. Each registers its options on the CLI11 app; main() parses and dispatches.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "core/exit_codes.h"

namespace vispec {

using Action = std::function<int()>;  // returns the exit code (core/exit_codes.h)

// Each add_* returns nothing; it sets `action` when its subcommand is chosen.
void add_run_command(CLI::App& app, Action& action);
void add_train_commands(CLI::App& app, Action& action);
void add_grid_command(CLI::App& app, Action& action);
void add_decoders_command(CLI::App& app, Action& action);
void add_eval_commands(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);
void add_bench_plot_command(CLI::App& app, Action& action);
void add_step_cost_command(CLI::App& app, Action& action);
void add_distill_commands(CLI::App& app, Action& action);
void add_verify_command(CLI::App& app, Action& action);
void add_export_command(CLI::App& app, Action& action);

}  // namespace vispec
