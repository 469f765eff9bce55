// vispec step-cost --decoders: the break-even table. A speculative decoder beats AR exactly where the tokens it
// commits per iteration (its mean accepted length, MAL) exceed what its iteration costs in AR steps:
//
//   break-even MAL = (time of one iteration) / (time of one AR step)        measured side by side in one run
//   projected speedup = MAL / break-even MAL
//
// For each decoder (at its paper defaults, with the sampling the AR rows use) and batch, on a published model's
// shape with random weights (LlamaGen's GPT-XL and the drafters a user would train or load for it:
// bench/shape_models.h): a warm-up decode of whole images (graphs captured on a GPU), then a timed one, divided
// by the batch's iterations (its slowest row's target forwards, the prefill included, as AR's step time is the
// image's time over its tokens). Random weights accept at their own rate, so the MAL of the projection is the one
// the same decoder reaches on the embedded model at the same settings (its weights are trained), per row and
// per batch (a batch iterates until its slowest row is done: rows' target forwards over the same samples cut
// into chunks of the batch, a sample's tokens being the same whatever its batch). The projection is labelled as
// such: it carries the embedded model's acceptance over to the shape's costs.
// Written as RESULTS/<name>.json and .md after every row, so that a run cut short keeps the rows it finished.
#pragma once

#include <string>

#include "bench/step_cost.h"

namespace vispec {

// Returns the path of the JSON written; throws after writing every row if a decoder failed (its row says why).
std::string run_break_even(const StepCostOptions& options);

}  // namespace vispec
