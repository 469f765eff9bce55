// Speculative Jacobi decoding (Teng et al., ICLR 2025): training-free and lossless.
#pragma once

#include <memory>

#include "decoding/common/cfg_model.h"
#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decoder.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/verify.h"

namespace vispec {

class SjdDecoder : public Decoder {
 public:
  // window: drafts verified per forward (SJD's 16-token window is the last committed token + 15 drafts).
  // accept: the rule drafts are verified by (SJD's own: exact); neighbours for the LANTERN rules.
  SjdDecoder(Gpt target, SamplingParams params, int64_t window, AcceptanceParams accept = {},
             std::shared_ptr<const CodebookNeighbours> neighbours = nullptr);
  std::string name() const override { return "sjd"; }
  DecodeResult decode(const DecodeRequest& request) override;
  bool refills_rows() const override { return true; }

 private:
  CfgModel target_;
  SamplingParams params_;
  int64_t window_;
  ChainRule rule_;
  IterationGraphs graphs_;              // the decode state's buffers and the iterations' graphs
  torch::Tensor column_, window_mask_;  // the window's columns and its block mask
};

}  // namespace vispec
