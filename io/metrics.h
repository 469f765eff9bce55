// Per-image records (OUT/metrics.jsonl, one JSON object per line) and the job summary (OUT/summary.json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vispec {

// Appends the records of one batch and fsyncs.
void append_metrics(const std::string& path, const std::vector<nlohmann::json>& records);
std::vector<nlohmann::json> read_metrics(const std::string& path);

}  // namespace vispec
