// The teacher-forced pass that turns a decoded batch into distillation rows (io/distill_schema.h): one
// forward of the target over each sample's final tokens (the cond stream, and the uncond stream if asked),
// whatever decoder produced them, so the data never depends on the decoder.
#pragma once

#include <torch/torch.h>

#include "io/distill_writer.h"
#include "models/gpt/gpt.h"

namespace vispec {

// tokens [B, T] (CPU int64) of B conditions; returns hidden [B, S, T, D] (float32, on the model's device).
torch::Tensor teacher_forced_hidden(Gpt& gpt, const Conditions& conditions, const torch::Tensor& tokens, int streams);

// Rows of one batch in the stored dtype (bf16 by round-to-nearest-even, as torch casts).
DistillBatch distill_batch(const torch::Tensor& hidden, const torch::Tensor& tokens, const Conditions& conditions,
                           const std::vector<uint64_t>& sample_ids, DistillDtype dtype);

}  // namespace vispec
