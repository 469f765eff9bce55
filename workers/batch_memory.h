// The device memory a job's batch asks for, estimated from the shapes of its model and decoder before anything
// is loaded: `batch_size: auto` takes the largest batch that fits the free memory of rank 0's device, and an
// explicit batch that cannot fit is refused at planning, in one line, before any unit runs.
//
// The estimate, per row (a sample, in every CFG stream): the KV caches at full length of the target and of the
// decoder's drafter (an EAGLE head: one layer of the target's shape), the activations of the widest block a
// decoder runs (kBlockPositions positions: logits in float32 and hidden states), and the VQ decoding of its image;
// once: the weight files as stored (a float32 file of a bf16 model counts twice its size: the safe side). A batch
// may plan to take kBatchMemoryShare of the free memory; the rest is the margin for what the estimate leaves out
// (the allocator's fragmentation, CUDA graphs' pools, LibTorch's workspaces).
#pragma once

#include <cstdint>
#include <string>

#include "workers/job_plan.h"

namespace vispec {

struct BatchMemory {
  int64_t weights = 0;       // bytes, once
  int64_t kv_per_row = 0;    // bytes per row: the KV caches
  int64_t work_per_row = 0;  // bytes per row: activations and the image's VQ decoding
  int64_t per_row() const { return kv_per_row + work_per_row; }
};

inline constexpr double kBatchMemoryShare = 0.8;
inline constexpr int64_t kBlockPositions = 64;  // the widest block of the decoders' defaults (EAGLE-2: 60 nodes)

BatchMemory batch_memory(const JobPlan& plan);
// One GPT's share of a row (in each of `streams` CFG streams): its KV cache at full length and a block's
// activations, `element` bytes per value; no weights. batch_memory() adds the drafters, the VQ and the files.
BatchMemory gpt_batch_memory(const GptConfig& gpt, int64_t element, int64_t streams);
// The largest batch whose memory fits kBatchMemoryShare of `free_bytes`, at most kMaxBatchSize (0: none).
int64_t largest_batch(const BatchMemory& m, int64_t free_bytes);
// The batch the job decodes with: job.batch_size, checked to fit; or for `batch_size: auto` the batch a run
// already journaled in OUT (`journaled`, 0 if none: a rerun keeps its batch, part of the job's identity), else the
// largest that fits, at most unit_size (a unit's samples are all a batch holds). Logs the plan; throws one line
// where an explicit batch cannot fit or not even one row can. `device`: where the free memory was read.
int64_t plan_batch_size(const JobPlan& plan, const BatchMemory& m, int64_t free_bytes, const std::string& device,
                        int64_t journaled);
// The batch_size in the identity of OUT's journal (its first line), 0 if there is none or it cannot be read.
int64_t journaled_batch_size(const std::string& out_dir);

}  // namespace vispec
