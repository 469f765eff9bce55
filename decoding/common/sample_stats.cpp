#include "decoding/common/sample_stats.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace vispec {

nlohmann::json stats_counts_json(const SampleStats& s) {
  return {{"target_forwards", s.target_forwards},
          {"draft_forwards", s.draft_forwards},
          {"drafted", s.drafted},
          {"accepted", s.accepted},
          {"tokens", s.tokens},
          {"batch_iterations", s.batch_iterations},
          {"idle_iterations", s.idle_iterations}};
}

namespace {
// j[key] as a count: a whole number, at least 0 (nlohmann's get<int64_t> would truncate 1.5 and take -3).
int64_t count_of(const nlohmann::json& j, const char* key) {
  const auto& v = j.at(key);
  const bool count = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT64_MAX)
                                            : v.is_number_integer() && v.get<int64_t>() >= 0;
  if (!count) throw nlohmann::json::type_error::create(302, std::string("'") + key + "' is not a count", &j);
  return v.get<int64_t>();
}
}  // namespace

SampleStats stats_counts_from_json(const nlohmann::json& j) {
  SampleStats s;
  s.target_forwards = count_of(j, "target_forwards");
  s.draft_forwards = count_of(j, "draft_forwards");
  s.drafted = count_of(j, "drafted");
  s.accepted = count_of(j, "accepted");
  s.tokens = count_of(j, "tokens");
  // Missing in a journal written before vispec counted them: 0.
  if (j.contains("batch_iterations")) s.batch_iterations = count_of(j, "batch_iterations");
  if (j.contains("idle_iterations")) s.idle_iterations = count_of(j, "idle_iterations");
  return s;
}

nlohmann::json sample_stats_json(const SampleStats& s) {
  auto j = stats_counts_json(s);
  j.update({{"mean_accepted_length", s.mean_accepted_length()},
            {"acceptance_rate", s.acceptance_rate()},
            {"idle_fraction", s.idle_fraction()},
            {"draft_ms", s.draft_ms},
            {"verify_ms", s.verify_ms},
            {"resample_ms", s.resample_ms},
            {"bookkeeping_ms", s.bookkeeping_ms},
            {"mean_tree_depth", s.mean_tree_depth()}});
  for (const auto& [key, value] : s.extra) j[key] = value;  // a method's own figures
  return j;
}

}  // namespace vispec
