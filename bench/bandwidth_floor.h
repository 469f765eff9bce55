// The memory-bandwidth floor of an AR step: the bytes a step must read (every weight matrix once, and the KV
// cache at the step's length, averaged over the image) over this device's copy bandwidth. What vispec step-cost
// sets AR's time per token against (bench/step_cost.h), and the break-even table AR's images per second
// (bench/break_even.h).
#pragma once

#include <torch/torch.h>

#include "models/gpt/gpt.h"

namespace vispec {

// Copy bandwidth in bytes per second, counting bytes read and written (a copy of N bytes moves 2N), best of 5
// after a warm-up.
double copy_bandwidth(const torch::Device& device);
// Bytes of the weights a decode step reads: every parameter but the embedding tables (a step gathers a few of
// their rows).
double weight_bytes(const Gpt& gpt);
// Bytes of the KV cache a step of `rows` rows reads, averaged over an image: step i (the prefill, then token i's
// forward) attends over cls + i + 1 entries.
double kv_bytes_per_step(const GptConfig& config, int64_t rows, int64_t element_bytes);

}  // namespace vispec
