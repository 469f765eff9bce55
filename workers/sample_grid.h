// A contact sheet of a run's images: one row per prompt (in prompt order), up to `per_row` images each,
// upscaled by `scale` with nearest neighbour. For README figures and quick looks.
#pragma once

#include <string>

namespace vispec {

void write_sample_grid(const std::string& run_dir, const std::string& png_path, int per_row, int scale);

}  // namespace vispec
