#include "decoding/floor/sample_stats.h"

#include <nlohmann/json.hpp>

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

SampleStats stats_counts_from_json(const nlohmann::json& j) {
  SampleStats s;
  s.target_forwards = j.at("target_forwards").get<int64_t>();
  s.draft_forwards = j.at("draft_forwards").get<int64_t>();
  s.drafted = j.at("drafted").get<int64_t>();
  s.accepted = j.at("accepted").get<int64_t>();
  s.tokens = j.at("tokens").get<int64_t>();
  for (auto [key, count] :
       {std::pair{"batch_iterations", &s.batch_iterations}, {"idle_iterations", &s.idle_iterations}})
    if (j.contains(key)) *count = j.at(key).get<int64_t>();
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
