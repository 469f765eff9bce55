#include "workers/sample_grid.h"

#include <map>
#include <vector>

#include "core/check.h"
#include "io/metrics.h"
#include "io/png.h"
#include "io/run_layout.h"
#include "io/sample_images.h"

namespace vispec {

void write_sample_grid(const std::string& run_dir, const std::string& png_path, int per_row, int scale) {
  const auto records = read_metrics(metrics_path(run_dir));
  VISPEC_CHECK(!records.empty(), run_dir, "/metrics.jsonl: no images to show");
  // Rows in order of first appearance of each prompt, samples by id.
  std::vector<std::string> order;
  std::map<std::string, std::map<uint64_t, int64_t>> rows;  // prompt -> sample id -> unit
  for (const auto& r : records) {
    const auto prompt = r.at("prompt").get<std::string>();
    if (!rows.count(prompt)) order.push_back(prompt);
    rows[prompt][r.at("sample_id").get<uint64_t>()] = r.value("unit", int64_t(-1));
  }
  SampleImages images(run_dir);
  const auto listed_in = metrics_path(run_dir);
  int w = 0, h = 0, c = 0;
  images.read(records[0].at("sample_id").get<uint64_t>(), records[0].value("unit", int64_t(-1)), listed_in, w, h, c);
  const int pad = 2, cell_w = w * scale + pad, cell_h = h * scale + pad;
  const int W = per_row * cell_w + pad, H = int(order.size()) * cell_h + pad;
  std::vector<uint8_t> sheet(size_t(W) * H * c, 255);
  for (size_t row = 0; row < order.size(); ++row) {
    int col = 0;
    for (const auto& [id, unit] : rows[order[row]]) {
      if (col == per_row) break;
      int iw, ih, ic;
      auto px = images.read(id, unit, listed_in, iw, ih, ic);
      VISPEC_CHECK(iw == w && ih == h && ic == c, run_dir, ": images differ in size");
      for (int y = 0; y < h * scale; ++y)
        for (int x = 0; x < w * scale; ++x)
          for (int k = 0; k < c; ++k)
            sheet[(size_t(pad + int(row) * cell_h + y) * W + pad + col * cell_w + x) * c + k] =
                px[(size_t(y / scale) * w + x / scale) * c + k];
      ++col;
    }
  }
  write_png(png_path, sheet, W, H, c);
}

}  // namespace vispec
