// The loop that drives a speculative decoder's iterations, written once: refilling finished rows, timing the
// phases, running (on a GPU replaying) the iteration's device half as one graph under the key the decoder gives,
// the iteration's one read that settles the rows and the caches, and charging each phase to the samples that
// took part. A decoder supplies what is its own: how a row takes a sample (`start`) and its iteration, which
// plans on the host, hands its device half (draft, verify, accept, commit) to device_half(), and says how many
// drafter forwards it ran.
//
//   IterationLoop loop(graphs_, rows, request, {&tcache, &dcache}, {pooled lengths...}, Commit::kChain);
//   loop.run(start, [&](const std::vector<int64_t>& active) {
//     loop.device_half(key, [&] { draft...; loop.end_draft(); verify...; loop.end_verify(); accept; commit; });
//     return drafter_forwards;
//   });
//   return loop.result();
//
// Inside the device half nothing may read the host (decoding/common/iteration_graphs.h says what a body may do).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

#include "decoding/common/decode_state.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/iteration_stats.h"
#include "decoding/common/phase_clock.h"
#include "models/gpt/step_graph.h"

namespace vispec {

class IterationLoop {
 public:
  // Which read ends an iteration: a chain decoder's (DecodeState::settle_chain) or a tree decoder's (settle_tree).
  enum class Commit { kChain, kTree };

  // rows: the decode state, made by graphs.rows(); caches: every cache the device half commits, and `pooled`
  // their pools' device lengths (CfgModel::pooled_lengths; a null one: the body always runs eagerly);
  // limit: the cells a row decodes in this loop (-1: the image; SSD's first row: the grid's width).
  IterationLoop(IterationGraphs& graphs, DecodeState& rows, const DecodeRequest& request, std::vector<KvCache*> caches,
                std::vector<const torch::Tensor*> pooled, Commit commit, int64_t limit = -1);

  // The decode's clock, from the loop's making: what a decoder times outside the loop (a prefill before it,
  // SSD's later rows after it) is charged on it too.
  PhaseClock& clock() { return clock_; }

  // Iterations while a row has cells left below the limit. start: how rows take samples (every row at the first
  // iteration, then each row whose image is done: DecodeState::next_iteration(start)), its time charged to their
  // samples as bookkeeping; null in a loop whose rows were started before it and do not refill. iteration: one
  // iteration over the rows still decoding, `active`; it calls device_half() once and returns the drafter
  // forwards it ran (charged per active row, with one target forward).
  void run(const std::function<void(const RowFill&)>& start,
           const std::function<int64_t(const std::vector<int64_t>& active)>& iteration);

  // The iteration's device half: `body` run eagerly, or with a key replayed as one graph (key: every host
  // number the body's operators depend on besides the batch and the job's seed, which the loop adds, the buckets
  // its forwards read through among them; empty: an iteration whose forwards cross a bucket, run eagerly).
  // Then its one read. Returns each row's accepted path, root first (Commit::kTree; empty for a chain).
  std::vector<std::vector<int64_t>> device_half(const StepKey& key, const std::function<void()>& body);
  // Ends of the phases inside a body (nothing where the device half may be replayed: IterationTimes::timed).
  void end_draft() { times_.end(times_.draft, clock_); }
  void end_verify() { times_.end(times_.verify, clock_); }

  // Every sample's tokens and statistics, its phases' times settled (after the loop and whatever follows it).
  DecodeResult result();

 private:
  IterationGraphs& graphs_;
  DecodeState& rows_;
  std::vector<KvCache*> caches_;
  std::vector<const torch::Tensor*> pooled_;
  Commit commit_;
  int64_t limit_;
  StepKey key_prefix_;  // the batch and the job's seed
  bool replays_;        // the device half may be replayed (IterationGraphs::replays)
  PhaseClock clock_;
  IterationTimes times_;
};

}  // namespace vispec
