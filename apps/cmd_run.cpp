// vispec run JOB.yaml: generate a job's images.
#include "apps/commands.h"
#include "workers/job_runner.h"

namespace vispec {

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("run", "generate the images of a job file");
  static std::string job;
  static std::string out;
  static std::vector<std::string> sets;
  cmd->add_option("job", job, "job file (YAML)")->required();
  cmd->add_option("--out", out, "output directory (overrides the job's `out`)");
  cmd->add_option("--set", sets, "override a job field: key.path=value (repeatable)")->allow_extra_args(false);
  cmd->callback([&action] {
    action = [] {
      const auto plan = plan_job(job, sets, out);  // validates everything before anything is written
      run_job(plan);
    };
  });
}

}  // namespace vispec
