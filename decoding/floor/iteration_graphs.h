// A decoder's whole iteration as one CUDA graph: the drafter's forwards, the verify forward, the acceptance and
// the commit, replayed with one launch, so that the host's only work per iteration is the replay, the one read
// of the accepted counts and the caches' host bookkeeping. On a GPU at small batches each of those ~1,000
// operators is microseconds of host time while its kernel runs for less; the forwards alone being graphs
// (decoding/floor/static_forwards.h) leaves the drafting, acceptance and commit between them eager.
//
// A decoder splits its iteration into a body (device work only: it reads and writes the decode state's buffers,
// the pooled static caches and tensors that outlive the decode; the caches' host bookkeeping of its forwards is
// allowed) and what follows it (DecodeRows::settle_chain's read, the host halves of the caches' commits). It
// runs the body through run() when the iteration is steady: its key (batch, chain length, the buckets its
// forwards read through, the job's seed) fixes every forward's key and every scalar of the body. Otherwise (an
// iteration whose forwards cross a length bucket) it runs the body eagerly, each forward still a graph.
//
// The decode state lives in buffers of this owner (rows()), one set per batch shape, written in place by every
// decode of that shape: a graph finds them where it was captured. On a CPU every body runs eagerly; there the
// tests hold the graph's contract (models/gpt/step_graph.h): the same operators in every steady iteration of a
// key, no host read inside, no buffer moved, and the caches' host state after the body equal to what a replay
// would leave.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decoding/floor/decode_rows.h"
#include "models/gpt/kv_cache.h"
#include "models/gpt/step_graph.h"

namespace vispec {

class IterationGraphs {
 public:
  // `request`'s decode state in this owner's buffers for its shape (see DecodeRows).
  DecodeRows rows(const DecodeRequest& request, int64_t cells, int64_t pad, torch::Device device,
                  int64_t path_width = 0);
  // A tensor of the decoder's own state that outlives an iteration (SJD's carried drafts), kept with `rows`'s
  // buffers: made once per batch shape, zeroed at each call (once per decode, before its loop); the body
  // writes it in place. Part of every graph's state.
  torch::Tensor state(const DecodeRows& rows, const std::string& name, at::IntArrayRef sizes,
                      const torch::TensorOptions& options);

  // Runs (or replays) `body` as the iteration of `key` over `rows` (made by rows()): cache_lengths are the
  // pooled device lengths of the caches it uses (CfgModel::pooled_lengths), caches their copies whose host
  // bookkeeping the body moves.
  void run(const DecodeRows& rows, const StepKey& key, const std::vector<const torch::Tensor*>& cache_lengths,
           const std::vector<KvCache*>& caches, const std::function<void()>& body);

  // Whether bodies run through run() may be replayed (a CUDA device with graphs on): a body then cannot time
  // its phases (an event inside a graph is not one the host can time), and the decoder times the iteration whole.
  bool replays(torch::Device device) const;

 private:
  struct Set {  // the state of one batch shape
    DecodeRows::Buffers rows;
    std::map<std::string, torch::Tensor> own;  // state()'s
  };
  Set& set_of(const DecodeRows& rows);
  std::map<std::vector<int64_t>, std::unique_ptr<Set>> sets_;               // by (rows, columns, paths, device)
  std::map<std::vector<const void*>, std::unique_ptr<StepGraphs>> graphs_;  // by the state's storage
  bool failed_ = false;                                                     // a check fell back to eager
};

}  // namespace vispec
