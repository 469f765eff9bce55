// vispec eval OUT: judges a finished (or partial) run's PNGs against the prompts they were made for.
// Reads OUT/metrics.jsonl for (sample id, class id), the PNGs, and the model config named in OUT/summary.json
// (or given); writes OUT/eval.json atomically and returns the report.
#pragma once

#include <string>

#include "eval/quality.h"

namespace vispec {

struct RunEvalOptions {
  std::string out_dir;
  std::string model_config;  // empty: the one OUT/summary.json names
  std::string device = "auto";
  int threads = 0;
};

QualityReport evaluate_run(const RunEvalOptions& options);

// The two reference points FID should be read against, at n = each of `sizes`: n real train images, and the
// VQ reconstructions of the same n images, each against the 10k real test images. Writes
// RESULTS/floors.json and RESULTS/floors.md; returns the JSON.
nlohmann::json measure_floors(const std::string& model_config, const std::vector<int64_t>& sizes,
                              const std::string& results_dir, const std::string& device, int threads);

}  // namespace vispec
