#include "workers/sample_export.h"

#include <map>
#include <vector>

#include "core/check.h"
#include "io/metrics.h"
#include "io/npz_writer.h"
#include "io/run_layout.h"
#include "io/sample_images.h"

namespace vispec {

int64_t export_samples_npz(const std::string& run_dir, const std::string& npz_path) {
  const auto listed_in = metrics_path(run_dir);
  std::map<uint64_t, int64_t> units;  // sample id -> unit, in id order
  for (const auto& r : read_metrics(listed_in)) units[r.at("sample_id").get<uint64_t>()] = r.value("unit", int64_t(-1));
  VISPEC_CHECK(!units.empty(), listed_in, ": no images to export");
  SampleImages images(run_dir);
  int width = 0, height = 0, channels = 0;
  images.read(units.begin()->first, units.begin()->second, listed_in, width, height, channels);
  NpzWriter npz(npz_path, "|u1", 1, {int64_t(units.size()), height, width, 3});
  std::vector<uint8_t> rgb(size_t(width) * size_t(height) * 3);
  for (const auto& [id, unit] : units) {
    int w = 0, h = 0, c = 0;
    const auto pixels = images.read(id, unit, listed_in, w, h, c);
    VISPEC_CHECK(w == width && h == height, listed_in, ": sample ", id, " is ", w, "x", h, ", sample ",
                 units.begin()->first, " ", width, "x", height, ": an .npz holds images of one size");
    VISPEC_CHECK(c >= 1 && c <= 4, listed_in, ": sample ", id, " has ", c, " channels");
    for (size_t p = 0; p < size_t(w) * size_t(h); ++p)
      for (int k = 0; k < 3; ++k) rgb[p * 3 + size_t(k)] = pixels[p * size_t(c) + size_t(c >= 3 ? k : 0)];
    npz.write(rgb.data(), rgb.size());
  }
  npz.commit();
  return int64_t(units.size());
}

}  // namespace vispec
