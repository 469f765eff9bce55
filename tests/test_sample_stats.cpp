// SampleStats' JSON, written once for the report to rank 0, the journal, summary.json and the metrics lines.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "decoding/common/sample_stats.h"

namespace vispec {
namespace {

SampleStats some_stats() {
  SampleStats s;
  s.target_forwards = 70;
  s.draft_forwards = 280;
  s.drafted = 276;
  s.accepted = 185;
  s.tokens = 256;
  s.batch_iterations = 80;
  s.idle_iterations = 12;
  s.draft_ms = 1.5;
  s.verify_ms = 2.5;
  s.tree_depth = 345;
  s.extra["expanded"] = 12;
  return s;
}

TEST(SampleStatsJson, CountsReadBackAsWritten) {
  const auto back = stats_counts_from_json(stats_counts_json(some_stats()));
  EXPECT_EQ(back.target_forwards, 70);
  EXPECT_EQ(back.draft_forwards, 280);
  EXPECT_EQ(back.drafted, 276);
  EXPECT_EQ(back.accepted, 185);
  EXPECT_EQ(back.tokens, 256);
  EXPECT_EQ(back.batch_iterations, 80);
  EXPECT_EQ(back.idle_iterations, 12);
  EXPECT_EQ(back.draft_ms, 0.0);  // times are not counts: a unit's report carries none
}

TEST(SampleStatsJson, AMissingOrWrongCountThrows) {
  auto j = stats_counts_json(some_stats());
  j.erase("drafted");
  EXPECT_THROW(stats_counts_from_json(j), nlohmann::json::out_of_range);
  j = stats_counts_json(some_stats());
  j["tokens"] = "many";
  EXPECT_THROW(stats_counts_from_json(j), nlohmann::json::type_error);
  for (const auto& bad : {nlohmann::json("some"), nlohmann::json(1.5), nlohmann::json(-3)}) {
    j = stats_counts_json(some_stats());
    j["idle_iterations"] = bad;  // not a count: not read as 0, 1 or -3
    EXPECT_THROW(stats_counts_from_json(j), nlohmann::json::type_error) << bad;
    j = stats_counts_json(some_stats());
    j["accepted"] = bad;
    EXPECT_THROW(stats_counts_from_json(j), nlohmann::json::type_error) << bad;
  }
}

// A journal written before the iteration counts were kept reads them as 0.
TEST(SampleStatsJson, AnOlderJournalsMissingIterationCountsReadAsZero) {
  auto j = stats_counts_json(some_stats());
  j.erase("batch_iterations");
  j.erase("idle_iterations");
  const auto back = stats_counts_from_json(j);
  EXPECT_EQ(back.batch_iterations, 0);
  EXPECT_EQ(back.idle_iterations, 0);
  EXPECT_EQ(back.idle_fraction(), 0.0);
}

TEST(SampleStatsJson, ASamplesLineHoldsItsRatesTimesAndExtras) {
  const auto s = some_stats();
  const auto j = sample_stats_json(s);
  EXPECT_EQ(j.at("accepted").get<int64_t>(), 185);
  EXPECT_DOUBLE_EQ(j.at("mean_accepted_length").get<double>(), 256.0 / 70.0);
  EXPECT_DOUBLE_EQ(j.at("acceptance_rate").get<double>(), 185.0 / 276.0);
  EXPECT_DOUBLE_EQ(j.at("idle_fraction").get<double>(), 12.0 / 80.0);
  EXPECT_DOUBLE_EQ(j.at("mean_tree_depth").get<double>(), 345.0 / 69.0);
  EXPECT_DOUBLE_EQ(j.at("verify_ms").get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j.at("expanded").get<double>(), 12.0);
}

}  // namespace
}  // namespace vispec
