// vispec export OUT --npz FILE: a run's images as the ADM evaluator's .npz (workers/sample_export.h), inside the run's
// protocol: it reads OUT under the run's lock (shared: a run writing OUT excludes it), only a finished run unless
// --partial, the units its journal has, in the output kind its journal names, and writes nothing inside OUT.
#include <filesystem>
#include <iostream>

#include "apps/commands.h"
#include "core/check.h"
#include "scheduler/journal.h"
#include "scheduler/output_lock.h"
#include "workers/sample_export.h"

namespace vispec {

namespace {
// Whether `path` (a file to write, which may not exist yet) lies inside directory `dir`, links resolved.
bool inside(const std::string& path, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto d = fs::weakly_canonical(dir, ec);
  const auto p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  const auto rel = p.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}
}  // namespace

void add_export_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("export",
                                 "write a run's images as one .npz (uint8 [N, H, W, 3], key arr_0), the "
                                 "sample file of the ADM evaluator's FID");
  static std::string run_dir, npz;
  static bool partial = false;
  cmd->add_option("run", run_dir, "a run's output directory")->required();
  cmd->add_option("--npz", npz, "the .npz to write (outside the run's directory)")->required();
  cmd->add_flag("--partial", partial, "export the units an unfinished run has done (refused otherwise)");
  cmd->callback([&action] {
    action = [] {
      require_run_directory(run_dir);  // what it reads back is a run's own files
      VISPEC_CHECK(!inside(npz, run_dir), "--npz ", npz, ": inside the run's directory ", run_dir,
                   ", where vispec writes nothing but the run's own files; give a path outside it");
      const OutputLock reading(run_dir, OutputLock::Mode::kReader);
      const Journal journal(run_dir);
      const int64_t planned = journal.header().value("units", int64_t(0));
      int64_t images = 0;
      std::vector<int64_t> units;
      for (const auto& [unit, record] : journal.done()) {
        units.push_back(unit);
        images += record.value("images", int64_t(0));
      }
      const int64_t done = int64_t(units.size());
      VISPEC_CHECK(partial || done >= planned, run_dir, ": ", done, " of ", planned, " units done (", images,
                   " images): the run is not finished; vispec resume ", run_dir,
                   " finishes it, or export --partial exports the ", images, " images done");
      const auto n = export_samples_npz(run_dir, units, npz);
      std::cout << "export " << run_dir << ": " << n << " images" << (done < planned ? " (--partial: " : "")
                << (done < planned ? std::to_string(done) + " of " + std::to_string(planned) + " units)" : "") << " -> "
                << npz << std::endl;
      return kExitOk;
    };
  });
}

}  // namespace vispec
