// vispec bench: every decoder of a bench file decodes the same samples (same prompts, same seeds) in one
// process. The samples are cut into chunks of batch_size; for each chunk every decoder decodes it in turn,
// the order rotating by one per chunk (A B C, B C A, C A B, ...), so that machine noise, thermal drift or a
// background job hits every decoder alike. Only decoder->decode() is timed (the VQ decode and judging are the
// same work for every decoder). Every image is judged (class agreement, FID), so quality is measured on all
// of them: ask for >= 1000 images per decoder for a meaningful FID.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench_config.h"

namespace vispec {

// Runs the bench and writes RESULTS/<name>.json, RESULTS/<name>.md and RESULTS/<name>.png (the plot; skipped
// with a warning where gnuplot is missing). Returns the JSON.
nlohmann::json run_bench(const BenchConfig& config, const std::string& results_dir);

}  // namespace vispec
