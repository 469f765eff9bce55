#include "io/run_layout.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vispec {

std::string sample_stem(uint64_t sample_id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08llu", static_cast<unsigned long long>(sample_id));
  return buf;
}

std::string shard_path(const std::string& out, int64_t unit) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/shards/unit-%06lld.tar", static_cast<long long>(unit));
  return out + buf;
}

std::string unit_metrics_path(const std::string& out, int64_t unit) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/metrics/unit-%06lld.jsonl", static_cast<long long>(unit));
  return out + buf;
}

namespace {
bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
// `name` is <prefix><digits><suffix> with at least `width` digits (sample_stem and the unit files pad theirs).
bool numbered(const std::string& name, const std::string& prefix, const std::string& suffix, size_t width) {
  if (name.size() < prefix.size() + suffix.size() + width) return false;
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  return all_digits(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
}
}  // namespace

bool is_run_file(const std::string& dir, const std::string& name) {
  if (dir.empty())
    return name == "journal.jsonl" || name == "metrics.jsonl" || name == "summary.json" || name == "errors.jsonl" ||
           name == "eval.json" || name == "planned-prompts.txt" || name == "job.yaml";
  if (dir == "images") return numbered(name, "", ".png", 8);
  if (dir == "tokens") return numbered(name, "", ".npy", 8);
  return unit_file_id(dir, name) >= 0 || (dir == "distill" && name == "index.h5");
}

bool is_run_temporary(const std::string& dir, const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  return at != std::string::npos && all_digits(name.substr(at + 5)) && is_run_file(dir, name.substr(0, at));
}

int64_t unit_file_id(const std::string& dir, const std::string& name) {
  const char* suffix = dir == "metrics" ? ".jsonl" : dir == "distill" ? ".h5" : dir == "shards" ? ".tar" : nullptr;
  // At most 18 digits: any id a job can have, and no overflow.
  if (!suffix || !numbered(name, "unit-", suffix, 6) || name.size() > 5 + 18 + std::strlen(suffix)) return -1;
  return std::strtoll(name.c_str() + 5, nullptr, 10);
}

}  // namespace vispec
