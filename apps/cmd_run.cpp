// vispec run JOB.yaml: generate a job's images, alone or as every rank of mpirun/srun.
#include "apps/commands.h"
#include "scheduler/run_job.h"

namespace vispec {

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("run", "generate the images of a job file (resumable; under mpirun/srun: all ranks)");
  static RunOptions o;
  cmd->add_option("job", o.job_file, "job file (YAML)")->required();
  cmd->add_option("--out", o.out_dir, "output directory (overrides the job's `out`)");
  cmd->add_option("--set", o.overrides, "override a job field: key.path=value (repeatable)")->allow_extra_args(false);
  cmd->add_flag("--new", o.start_over, "discard OUT's journal and outputs and start over (e.g. after a config change)");
  cmd->callback([&action] { action = [] { return run_job(o); }; });
}

}  // namespace vispec
