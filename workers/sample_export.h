// A finished run's images as one array for the evaluators other papers report FID with: the ADM evaluator's
// .npz (numpy.load(path)["arr_0"]: uint8 [N, H, W, 3], RGB), the form LlamaGen's and most AR image papers'
// sample files take. Samples in id order, read from either output (io/sample_images.h); a grayscale image
// becomes three equal channels, an alpha channel is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

// Writes the .npz of the samples of `units` (the run's journaled units, whose metrics files list them), whole
// or not at all, and returns how many images it holds. A temporary an earlier export to the same file left when
// it was killed is removed first (its process gone). No images, or images of different sizes, is one line
// naming the file and sample.
int64_t export_samples_npz(const std::string& run_dir, const std::vector<int64_t>& units, const std::string& npz_path);

}  // namespace vispec
