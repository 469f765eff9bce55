// vispec inspect FILE.h5: a distillation file's schema, shapes and dtypes.
// vispec distill-index OUT: rebuild OUT/distill/index.h5 over exactly the journaled units (e.g. of a partial run).
#include <iostream>

#include "apps/commands.h"
#include "io/distill_index.h"
#include "io/distill_schema.h"
#include "core/check.h"
#include "scheduler/journal.h"
#include "scheduler/output_lock.h"

namespace vispec {

void add_distill_commands(CLI::App& app, Action& action) {
  static std::string file, out;
  auto* inspect = app.add_subcommand("inspect", "print an HDF5 distillation file's schema, shapes and dtypes");
  inspect->add_option("file", file, "a unit file or index.h5")->required();
  inspect->callback([&action] {
    action = [] {
      std::cout << describe_h5(file);
      return kExitOk;
    };
  });
  auto* index = app.add_subcommand("distill-index", "rebuild OUT/distill/index.h5 over the journaled units");
  index->add_option("out", out, "the run's output directory")->required();
  index->callback([&action] {
    action = [] {
      require_run_directory(out);  // by content, before the lock or the index is written
      const OutputLock lock(out);  // one writer: a running job writes its own index when it ends
      const auto units = distill_units(Journal(out).done());
      build_distill_index(out, units);
      std::cout << describe_h5(distill_index_path(out));
      return kExitOk;
    };
  });
}

}  // namespace vispec
