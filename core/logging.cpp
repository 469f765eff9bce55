#include "core/logging.h"

#include <ctime>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace vispec {
void init_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("vispec");
  logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
}
std::string utc_timestamp() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string hours_minutes_seconds(double seconds) {
  if (!(seconds >= 0 && seconds < 1e12)) return "?";
  const auto s = int64_t(seconds + 0.5);
  return fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
}

}  // namespace vispec
