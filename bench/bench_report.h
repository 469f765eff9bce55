// A bench's results as files: RESULTS/<name>.json (everything), RESULTS/<name>.md (the table docs/benchmarks.md
// shows, spliced in by bench/splice_readme.py) and its pictures (bench/bench_plot.h: <name>.png, speedup against
// FID and against class agreement, and <name>-accepted.png, the mean accepted lengths).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vispec {

void write_bench_report(const nlohmann::json& results, const std::string& results_dir);
std::string bench_markdown(const nlohmann::json& results);

}  // namespace vispec
