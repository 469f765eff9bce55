// Speculative decoding with a small AR drafter (Leviathan et al. 2023; Chen et al. 2023), any acceptance rule.
#pragma once

#include <memory>

#include "decoding/common/acceptance.h"
#include "decoding/common/cfg_model.h"
#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decoder.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/verify.h"

namespace vispec {

class SdDecoder : public Decoder {
 public:
  // neighbours: needed by the LANTERN rules only (may be null otherwise).
  SdDecoder(Gpt target, Gpt drafter, SamplingParams params, int64_t gamma, AcceptanceParams accept,
            std::shared_ptr<const CodebookNeighbours> neighbours);
  std::string name() const override { return "sd"; }
  DecodeResult decode(const DecodeRequest& request) override;
  bool refills_rows() const override { return true; }

 private:
  CfgModel target_, drafter_;
  SamplingParams params_;
  int64_t gamma_;
  ChainRule rule_;
  IterationGraphs graphs_;          // the decode state's buffers and the iterations' graphs
  torch::Tensor one_, chain_mask_;  // the drafter's and the verify forward's block masks
};

}  // namespace vispec
