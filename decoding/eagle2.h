// EAGLE-2: a one-layer feature-level drafter, a dynamic draft tree, one target forward per tree; LANTERN,
// LANTERN++ and Cool-SD are acceptance rules on the same trees (`accept:` in the job file), ADT-Tree a policy
// choosing each tree's shape (decoding/adt_tree.h).
#pragma once

#include <memory>
#include <optional>

#include "decoding/common/acceptance.h"
#include "decoding/adt_tree.h"
#include "decoding/common/cfg_model.h"
#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder.h"
#include "decoding/common/draft_tree.h"
#include "decoding/common/eagle_drafter_state.h"
#include "decoding/common/forward_graphs.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/draft_tree.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/verify.h"
#include "models/drafters/eagle_drafter.h"

namespace vispec {

class Eagle2Decoder : public Decoder {
 public:
  // adt: ADT-Tree's per-position shapes starting from `shape` (null: EAGLE-2's fixed shape).
  Eagle2Decoder(std::string name, Gpt target, EagleDrafter drafter, SamplingParams params, TreeShape shape,
                AcceptanceParams accept, std::shared_ptr<const CodebookNeighbours> neighbours,
                std::optional<AdtParams> adt = std::nullopt);
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
  TreeShape shape_;
  ChainRule rule_;  // the acceptance rule and its neighbour table on the device
  std::optional<AdtParams> adt_;

  // The K largest of the drafter's guided log-probs at drafter outputs [R, ..., D] -> [B, ..., K], which the
  // tree grows by (draft_tree.h).
  TopLogProbs draft_top(const torch::Tensor& features, int64_t K) const;
  // One expansion of the trees (eagle2.cpp): the drafter over the newest level's nodes, extending its pending
  // block; `drafted` collects the drafter's outputs of every node so far [R, M, D].
  TreeExpandTop expansion(EagleDrafterState& pairs, KvCache& dcache, const torch::Tensor& catchup,
                          const DecodeState::Span& cells, torch::Tensor& drafted);
};

// A decoder on EAGLE-2's trees as the registry builds it: eagle2 and lantern (eagle2.cpp) differ in their
// default rule; adt_tree (adt_tree.cpp) adds its policy's fields to the same entry.
struct Eagle2Settings {
  TreeShape shape;
  std::optional<AdtParams> adt;
};
DecoderEntry eagle2_family_entry(const std::string& name, const std::string& summary, const std::string& default_rule);

}  // namespace vispec
