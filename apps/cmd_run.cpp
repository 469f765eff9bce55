// vispec run JOB.yaml|OUT and vispec resume OUT: generate a job's images, alone or as every rank of mpirun/srun.
// A run keeps its resolved job as OUT/job.yaml, so a run's directory stands for its job.
#include "apps/commands.h"
#include "scheduler/run_job.h"

namespace vispec {

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("run",
                                 "generate the images of a job file, or go on with a run's OUT (resumable; "
                                 "under mpirun/srun: all ranks)");
  static RunOptions o;
  cmd->add_option("job", o.job_file, "job file (YAML), or the output directory of a run (its job.yaml)")->required();
  cmd->add_option("--out", o.out_dir, "output directory (overrides the job's `out`)");
  cmd->add_option("--set", o.overrides, "override a job field: key.path=value (repeatable)")->allow_extra_args(false);
  cmd->add_flag("--new", o.start_over, "discard OUT's journal and outputs and start over (e.g. after a config change)");
  cmd->callback([&action] { action = [] { return run_job(o); }; });

  auto* resume = app.add_subcommand("resume",
                                    "go on with a run: the job its output directory keeps (OUT/job.yaml), "
                                    "no flags needed");
  static RunOptions r;
  r.resume = true;
  resume->add_option("out", r.job_file, "the output directory of a run")->required();
  resume->add_option("--set", r.overrides, "override a job field, e.g. threads=8 or device=cuda (repeatable)")
      ->allow_extra_args(false);
  resume->callback([&action] { action = [] { return run_job(r); }; });
}

}  // namespace vispec
