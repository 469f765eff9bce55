#include "workers/sample_export.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <vector>

#include "core/check.h"
#include "io/metrics.h"
#include "io/npz_writer.h"
#include "io/run_layout.h"
#include "io/sample_images.h"

namespace vispec {

namespace {
// What a killed export to `path` left: path.tmp.<pid> (io/atomic_file.h's name) of a process that is gone. Only
// such names are removed: vispec never deletes what it did not write.
void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const auto dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const auto prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 9) continue;
    const auto pid = name.substr(prefix.size());
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(pid_t(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;  // its process lives (or may)
    std::error_code removed;
    if (fs::remove(it->path(), removed)) spdlog::info("removed {}, left by a killed export", it->path().string());
  }
}
}  // namespace

int64_t export_samples_npz(const std::string& run_dir, const std::vector<int64_t>& done, const std::string& npz_path) {
  std::map<uint64_t, int64_t> units;  // sample id -> unit, in id order
  for (const int64_t unit : done) {
    const auto path = unit_metrics_path(run_dir, unit);
    for (const auto& r : read_metrics(path)) units[r.at("sample_id").get<uint64_t>()] = unit;
  }
  VISPEC_CHECK(!units.empty(), run_dir, ": no images to export");
  remove_stale_temporaries(npz_path);
  SampleImages images(run_dir);
  int width = 0, height = 0, channels = 0;
  const auto listed_in = [&](int64_t unit) { return unit_metrics_path(run_dir, unit); };
  images.read(units.begin()->first, units.begin()->second, listed_in(units.begin()->second), width, height, channels);
  NpzWriter npz(npz_path, "|u1", 1, {int64_t(units.size()), height, width, 3});
  std::vector<uint8_t> rgb(size_t(width) * size_t(height) * 3);
  for (const auto& [id, unit] : units) {
    int w = 0, h = 0, c = 0;
    const auto pixels = images.read(id, unit, listed_in(unit), w, h, c);
    VISPEC_CHECK(w == width && h == height, listed_in(unit), ": sample ", id, " is ", w, "x", h, ", sample ",
                 units.begin()->first, " ", width, "x", height, ": an .npz holds images of one size");
    VISPEC_CHECK(c >= 1 && c <= 4, listed_in(unit), ": sample ", id, " has ", c, " channels");
    for (size_t p = 0; p < size_t(w) * size_t(h); ++p)
      for (int k = 0; k < 3; ++k) rgb[p * 3 + size_t(k)] = pixels[p * size_t(c) + size_t(c >= 3 ? k : 0)];
    npz.write(rgb.data(), rgb.size());
  }
  npz.commit();
  return int64_t(units.size());
}

}  // namespace vispec
