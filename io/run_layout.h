// Where a run's outputs live under its output directory OUT (one place, so every reader and writer agree):
//   OUT/images/<stem>.png     OUT/tokens/<stem>.npy     OUT/metrics.jsonl     OUT/summary.json     OUT/eval.json
// with <stem> the sample id, zero-padded to 8 digits, or with `output: shards` OUT/shards/unit-<id>.tar in
// their place, one archive per unit holding <stem>.png, <stem>.tokens.npy and <stem>.json for each of its
// samples (io/tar_archive.h); besides them OUT/journal.jsonl, OUT/errors.jsonl,
// OUT/job.yaml, OUT/planned-prompts.txt, OUT/metrics/unit-<id>.jsonl and, when distilling,
// OUT/distill/unit-<id>.h5 and OUT/distill/index.h5.
#pragma once

#include <cstdint>
#include <string>

namespace vispec {

std::string sample_stem(uint64_t sample_id);  // "00000042"
inline std::string image_path(const std::string& out, uint64_t id) {
  return out + "/images/" + sample_stem(id) + ".png";
}
inline std::string tokens_path(const std::string& out, uint64_t id) {
  return out + "/tokens/" + sample_stem(id) + ".npy";
}
std::string shard_path(const std::string& out, int64_t unit);         // OUT/shards/unit-000012.tar
std::string unit_metrics_path(const std::string& out, int64_t unit);  // OUT/metrics/unit-000012.jsonl
inline std::string metrics_path(const std::string& out) { return out + "/metrics.jsonl"; }
inline std::string summary_path(const std::string& out) { return out + "/summary.json"; }
inline std::string eval_path(const std::string& out) { return out + "/eval.json"; }
// The prompt file as planned, copied when the run starts: the workers read their units' prompts from it, so
// an edit of the prompt file during a run changes nothing (workers/job_plan.h's snapshot_prompts).
inline std::string prompts_snapshot_path(const std::string& out) { return out + "/planned-prompts.txt"; }
// The job as resolved when the run started (every default filled in, every --set applied, paths absolute):
// `vispec resume OUT` (or `vispec run OUT`) runs it again with no flags (io/job_config.h's resolved_job_yaml).
inline std::string job_snapshot_path(const std::string& out) { return out + "/job.yaml"; }

// The directories of OUT that hold a run's files, "" for OUT itself.
inline constexpr const char* kRunDirectories[] = {"", "images", "tokens", "shards", "metrics", "distill"};
// Whether `name` is a file a run writes into OUT/`dir` (one of kRunDirectories), and whether it is one's
// atomic-write temporary (<name>.tmp.<pid>). Cleanups and --new touch these names and nothing else: vispec
// never deletes what it did not write.
bool is_run_file(const std::string& dir, const std::string& name);
bool is_run_temporary(const std::string& dir, const std::string& name);
// The unit of a per-unit file (metrics/unit-<id>.jsonl, shards/unit-<id>.tar, distill/unit-<id>.h5); -1 for any
// other name.
int64_t unit_file_id(const std::string& dir, const std::string& name);

}  // namespace vispec
