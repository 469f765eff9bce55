// SJD-PAC (CVPR 2026): speculative Jacobi decoding whose window is a shallow K-ary tree followed by a chain
// (proactive drafting), verified by recursive rejection sampling over siblings, and whose positions past a
// rejection keep their drafts coupled to this forward's outputs (adaptive continuation). Training-free and, as
// corrected here, lossless.
#pragma once

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "decoding/common/cfg_model.h"
#include "decoding/common/decoder.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/verify.h"

namespace vispec {

// The window's shape: `width` K candidates at each of the tree's depths 1 .. depth - 1 (a full K-ary tree of
// `depth` levels, the root's among them), then a chain under the tree's first-candidate path; `window` drafts in
// all (the nodes besides the root).
struct PacShape {
  int64_t width = 4;           // K
  int64_t depth = 3;           // D: levels of the K-ary tree, the root's included
  int64_t window = 63;         // drafts per forward (the paper's 64-token window less its root)
  int64_t tree_nodes() const;  // (K^D - 1) / (K - 1): the K-ary tree's nodes, the root's included
  int64_t main_depth() const { return depth + (window + 1 - tree_nodes()); }  // M: depths 0 .. M - 1 on the main path
};

// The window's nodes: the root, the K-ary tree level by level (each parent's children in candidate order), then
// the chain under the main path. Each node's parent (-1: the root), depth and candidate (its rank among its
// siblings, the grid row its token comes from), and the main path's node at each depth 0 .. M - 1.
struct PacTree {
  std::vector<int64_t> parent, depth, rank, main;
};
PacTree pac_tree(const PacShape& shape);

// The released code's bookkeeping where it is not exact (sjd_pac.cpp lists its five departures), one at a time:
// never a job's choice, kept for the negative controls of the exactness test (tests/test_sjd_pac.cpp).
enum class PacRelease {
  kNone,                  // the exact algorithm
  kFirstWindowReplacing,  // a first window's candidates drawn with replacement
  kUniformBonus,          // the token after a fully accepted main path drawn uniformly, not from p
};

class SjdPacDecoder : public Decoder {
 public:
  SjdPacDecoder(Gpt target, SamplingParams params, PacShape shape, PacRelease release = PacRelease::kNone);
  std::string name() const override { return "sjd_pac"; }
  DecodeResult decode(const DecodeRequest& request) override;
  bool refills_rows() const override { return true; }

 private:
  CfgModel target_;
  SamplingParams params_;
  PacShape shape_;
  PacRelease release_;
  ChainRule rule_;          // the exact rule
  IterationGraphs graphs_;  // the decode state's buffers and the iterations' graphs
  // The window's tables on the device for a batch (sjd_pac.cpp), made once per (batch, device) and kept: a
  // replayed iteration reads them where it was captured.
  struct Tables;
  const Tables& tables(int64_t batch, torch::Device device);
  struct Run;  // one decode's state and phases (sjd_pac.cpp)
  std::map<std::pair<int64_t, std::string>, std::shared_ptr<const Tables>> tables_;
};

}  // namespace vispec
