#include "io/metrics.h"

#include <sstream>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

void append_metrics(const std::string& path, const std::vector<nlohmann::json>& records) {
  std::string lines;
  for (const auto& r : records) lines += r.dump() + "\n";
  append_file_synced(path, lines);
}

std::vector<nlohmann::json> read_metrics(const std::string& path) {
  std::istringstream in(read_file(path));  // every read checked: a failed one is an error, not fewer lines
  std::vector<nlohmann::json> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const std::exception&) {
      VISPEC_FAIL(path, ":", n, ": not a JSON line");
    }
  }
  return out;
}

}  // namespace vispec
