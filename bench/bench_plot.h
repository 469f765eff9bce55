// A bench's pictures, drawn by gnuplot from its results JSON (bench/bench_report.h):
//   <stem>.png           speedup (log scale) against FID and against class agreement, one colour and legend
//                        entry per variant, or, past twelve variants, per decoder family (the decoder's name:
//                        sd, eagle2, lantern, ...), so that 26 variants do not bury each other under labels;
//                        FID from 0, agreement up to 1;
//   <stem>-accepted.png  the mean accepted length (tokens per target forward) of every variant, a bar each in its
//                        family's colour: the figure that says what a decoder can gain where the target's
//                        forward is the cost (a GPU at small batches); not drawn for a bench of AR alone.
// Without gnuplot a warning line says so and nothing is written. `vispec bench-plot RESULTS.json` redraws both
// from a recorded bench.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vispec {

void write_bench_plots(const nlohmann::json& results, const std::string& stem);

}  // namespace vispec
