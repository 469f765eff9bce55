// EAGLE-1: the EAGLE drafter on a STATIC tree whose children are drawn without replacement, verified with the
// sibling-adjusted drafter probabilities. LANTERN++ (`lanternpp`) and Cool-SD (`coolsd`) are this decoder with
// their acceptance rules, as their papers run them.
#pragma once

#include <map>
#include <memory>
#include <utility>

#include "decoding/common/acceptance.h"
#include "decoding/common/cfg_model.h"
#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder.h"
#include "decoding/common/eagle_drafter_state.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/forward_graphs.h"
#include "decoding/common/static_tree.h"
#include "decoding/common/verify.h"
#include "models/drafters/eagle_drafter.h"

namespace vispec {

class Eagle1Decoder : public Decoder {
 public:
  Eagle1Decoder(std::string name, Gpt target, EagleDrafter drafter, SamplingParams params, StaticTree tree,
                AcceptanceParams accept, std::shared_ptr<const CodebookNeighbours> neighbours);
  std::string name() const override { return name_; }
  DecodeResult decode(const DecodeRequest& request) override;
  bool refills_rows() const override { return true; }

 private:
  std::string name_;
  CfgModel target_;
  EagleDrafter drafter_;
  ForwardGraphs drafter_steps_;  // the drafter's pooled static caches and their graphs, across decodes
  IterationGraphs graphs_;       // the decode state's buffers and the iterations' graphs
  SamplingParams params_;
  StaticTree tree_;
  ChainRule rule_;  // the acceptance rule and its neighbour table on the device
  // The static tree's tables on the device for a batch (eagle1.cpp), made once per (batch, device) and kept:
  // a replayed iteration reads them where it was captured.
  struct Tables;
  const Tables& tables(int64_t batch, torch::Device device);
  std::map<std::pair<int64_t, std::string>, std::shared_ptr<const Tables>> tables_;

  // The guided drafter distribution at drafter outputs [R, M, D]: the processed one (the raw CFG softmax at
  // T = 0, whose top-n are the drafts) [B, M, V].
  torch::Tensor draft_probs(const torch::Tensor& features) const;
  // Every row's static tree drafted level by level on the device (eagle1.cpp), cells: those of depths 1 .. L + 1.
  struct DraftedTree;
  DraftedTree draft_tree(const Tables& tab, EagleDrafterState& pairs, KvCache& dcache, DecodeState& rows,
                         const DecodeState::Span& cells, const torch::Tensor& catchup);
};

}  // namespace vispec
