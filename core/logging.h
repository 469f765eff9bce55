// Logging setup: spdlog to stderr, one format for every command. Progress lines go through spdlog::info.
#pragma once

#include <string>

namespace vispec {
// level: "debug", "info", "warn", "error".
void init_logging(const std::string& level = "info");
// "2026-11-22T06:22:03Z": the time stamp of journals and bench results.
std::string utc_timestamp();
// A duration for a person, as the progress lines' ETA: "1:02:03" (hours unbounded), "?" if not finite.
std::string hours_minutes_seconds(double seconds);
}  // namespace vispec
