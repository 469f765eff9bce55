// CUDA graphs over static decode steps: the one owner of capture and replay.
//
// A static step (models/gpt/kv_cache.h, "The static step") issues the same kernels on the same addresses at every
// step of a length bucket, and reads nothing from the host; only the contents of device tensors change. Such a
// step can be recorded once as a CUDA graph and replayed: the host then launches one graph per step instead of
// ~45 operators per layer, which is what bounds a GPU decode at small batches.
//
// StepGraphs::run(key, step) runs `step` (a function of tensor operations on static buffers only, no host
// bookkeeping) for a key (rows, block width, length bucket). Eager execution is the reference and the only path
// on a CPU, with cuda_graphs: off, or after a failed check. On CUDA, the first run of a key:
//   1. runs the step eagerly (the reference; its result is the one kept),
//   2. restores the step's state, warms the step up on a side stream and captures it there, in one memory pool
//      shared by every graph of this owner,
//   3. restores the state again and replays the graph once: if its outputs or state differ from the eager
//      step's by a single bit, or capture failed, it says so in one warning line, drops every graph and runs
//      eagerly from then on (the state is put back to the eager result), so a user never gets other images.
// Later runs of the key replay the graph. Every run checks that no state tensor's storage has moved (a graph
// would go on reading the old one).
//
// A step may contain other owners' steps (a decoder's whole iteration holds its forwards): inside a step, a
// run runs eagerly, so that the outer graph records it. A step runs several times at its capture, so whatever
// host bookkeeping it does (static caches' plans, models/gpt/kv_cache.h) it restarts at its top; a replay does
// none of it, and the owner puts the host right after the run from what the device says or what it knew
// (decoding/common/iteration_graphs.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vispec {

// cuda_graphs: auto | off from the job (auto: graphs wherever a step runs on CUDA). Process-wide, set once by
// the worker, the bench and step-cost before decoding.
void set_cuda_graphs(bool enabled);
bool cuda_graphs_enabled();

// Whether this thread is running a step (eagerly, on a CPU, or being captured): host code that a replay would
// skip must not be, and asserts so (the CPU's proof that a replay leaves the host nothing to miss).
bool inside_step();

// What a captured graph is specialised on: for a forward, rows, block width (tokens per row per step) and keys
// of the view; for a decoder's iteration, what fixes its forwards' keys and its scalars.
using StepKey = std::vector<int64_t>;

class StepGraphs {
 public:
  // state: every tensor a step reads or writes that outlives the step (its inputs and outputs, counters, the
  // cache's lengths), restored around the check; the weights and the cache's keys/values are not listed (a
  // step writes only the K/V slots its lengths pick, and a repeated step writes them again). outputs: what is
  // compared between the eager step and the replay (the logits, the tokens). Pointers to tensors that outlive
  // this object, whose storage must never move.
  // record_name: how a run is marked for profiles and traces (a forward's "vispec::static_step", a decoder
  // iteration's "vispec::iteration_graph").
  StepGraphs(c10::Device device, std::vector<const at::Tensor*> state, std::vector<const at::Tensor*> outputs,
             const char* record_name = "vispec::static_step");
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  void run(const StepKey& key, const std::function<void()>& step);
  // Whether steps are replayed as graphs (false on a CPU, with graphs off, or after a failed check).
  bool replaying() const;
  int64_t graphs() const;  // captured so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  const char* record_name_;
};

}  // namespace vispec
