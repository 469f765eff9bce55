// Where a run's outputs live under its output directory OUT (one place, so every reader and writer agree):
//   OUT/images/<stem>.png     OUT/tokens/<stem>.npy     OUT/metrics.jsonl     OUT/summary.json     OUT/eval.json
// with <stem> the sample id, zero-padded to 8 digits.
#pragma once

#include <cstdint>
#include <string>

namespace vispec {

std::string sample_stem(uint64_t sample_id);  // "00000042"
inline std::string image_path(const std::string& out, uint64_t id) { return out + "/images/" + sample_stem(id) + ".png"; }
inline std::string tokens_path(const std::string& out, uint64_t id) { return out + "/tokens/" + sample_stem(id) + ".npy"; }
inline std::string metrics_path(const std::string& out) { return out + "/metrics.jsonl"; }
inline std::string summary_path(const std::string& out) { return out + "/summary.json"; }
inline std::string eval_path(const std::string& out) { return out + "/eval.json"; }

}  // namespace vispec
