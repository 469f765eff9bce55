// A decoder's whole iteration as one CUDA graph: the drafter's forwards, the verify forward, the acceptance and
// the commit, replayed with one launch, so that the host's only work per iteration is the replay, the one read
// of the accepted counts and the caches' host bookkeeping. On a GPU at small batches each of those ~1,000
// operators is microseconds of host time while its kernel runs for less; the forwards alone being graphs
// (decoding/common/forward_graphs.h) leaves the drafting, acceptance and commit between them eager.
//
// A decoder splits its iteration into a body (device work only: it reads and writes the decode state's buffers,
// the pooled static caches and tensors that outlive the decode; the caches' host plans of its forwards and
// commits are allowed) and what follows it (DecodeState::settle_chain's or settle_tree's read). It runs the body
// through run(), with a key when the iteration is steady: the key (batch, chain length, the buckets its forwards
// read through, the job's seed) fixes every forward's key and every scalar of the body, and the body is
// replayed. Without one (an iteration whose forwards cross a length bucket) the body runs eagerly, each forward
// still a graph.
//
// The caches' device lengths are the truth (models/gpt/kv_cache.h); the host keeps a plan of them, which picks
// the buckets. run() starts the body, every run of it (a capture runs it several times), from the plans as they
// stood before it, and ends it by copying the device lengths into the iteration's read, which settles the plans
// (DecodeState::read_lengths_on_device); a body with no read settles them on lengths the host knew in advance
// instead. A replay leaves nothing of the host to follow.
//
// The decode state lives in buffers of this owner (rows()), one set per batch shape, written in place by every
// decode of that shape: a graph finds them where it was captured. On a CPU every body runs eagerly; there the
// tests hold the graph's contract (models/gpt/step_graph.h): the same operators in every steady iteration of a
// key, no host read inside, no buffer moved, and the caches' plans settled on exactly their device lengths and
// never below them (set_kv_plan_check).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decoding/common/decode_state.h"
#include "models/gpt/kv_cache.h"
#include "models/gpt/step_graph.h"

namespace vispec {

class IterationGraphs {
 public:
  // `request`'s decode state in this owner's buffers for its shape (see DecodeState).
  DecodeState rows(const DecodeRequest& request, int64_t cells, int64_t pad, torch::Device device,
                   int64_t path_width = 0);
  // A tensor of the decoder's own state that outlives an iteration (SJD's carried drafts), kept with `rows`'s
  // buffers: made once per batch shape, zeroed at each call (once per decode, before its loop); the body
  // writes it in place. Part of every graph's state.
  torch::Tensor state(const DecodeState& rows, const std::string& name, at::IntArrayRef sizes,
                      const torch::TensorOptions& options);

  // Runs (or, with a key, replays) `body` as an iteration over `rows` (made by rows()) and `caches`, whose pooled
  // device lengths are cache_lengths (CfgModel::pooled_lengths; a null one: the body runs eagerly). `after`:
  // every cache's lengths after the body where the host knows them (a block of known commits), on which their
  // plans are settled; empty: the body's end copies them into the read that follows it (rows.settle_chain or
  // rows.settle_tree), which settles them.
  void run(DecodeState& rows, const StepKey& key, const std::vector<const torch::Tensor*>& cache_lengths,
           const std::vector<KvCache*>& caches, const std::function<void()>& body,
           const std::vector<std::vector<int64_t>>& after = {});

  // Whether bodies run through run() may be replayed (a CUDA device with graphs on): a body then cannot time
  // its phases (an event inside a graph is not one the host can time), and the decoder times the iteration whole.
  bool replays(torch::Device device) const;

 private:
  struct Set {  // the state of one batch shape
    DecodeState::Buffers rows;
    std::map<std::string, torch::Tensor> own;  // state()'s
  };
  Set& set_of(const DecodeState& rows);
  // run()'s body through the graphs of `key` over the state of `rows`.
  void replay(const DecodeState& rows, const StepKey& key, const std::vector<const torch::Tensor*>& cache_lengths,
              const std::function<void()>& iteration);
  std::map<std::vector<int64_t>, std::unique_ptr<Set>> sets_;               // by (rows, columns, paths, device)
  std::map<std::vector<const void*>, std::unique_ptr<StepGraphs>> graphs_;  // by the state's storage
  bool failed_ = false;                                                     // a check fell back to eager
};

}  // namespace vispec
