// Speculative Jacobi decoding (Teng et al., ICLR 2025), and SCD (Speculative Coupled Decoding, ICML 2026), SJD
// whose carried drafts are coupled to the drafts they replace: training-free and lossless. GSD (decoding/gsd.cpp)
// is this decoder under its grouped rule.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "decoding/common/cfg_model.h"
#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/verify.h"

namespace vispec {

// How a draft carried past a rejection is drawn from its position's new distribution (decoding/common/coupling.h):
// afresh (SJD's Jacobi update), or coupled to the draft it replaces (SCD). kMaximalKeepsOldQ is the bookkeeping of
// SCD's released maximal-coupling code (a kept draft keeps its old q, not p): biased, never a job's choice, kept
// for the negative control of the exactness test (tests/test_sjd_decoder.cpp).
enum class Coupling { kJacobi, kMaximal, kGumbel, kMaximalKeepsOldQ };
Coupling parse_coupling(const std::string& word);  // maximal | gumbel

class SjdDecoder : public Decoder {
 public:
  // window: drafts verified per forward (SJD's 16-token window is the last committed token + 15 drafts).
  // accept: the rule drafts are verified by (SJD's own: exact); neighbours for the LANTERN rules.
  SjdDecoder(Gpt target, SamplingParams params, int64_t window, AcceptanceParams accept = {},
             std::shared_ptr<const CodebookNeighbours> neighbours = nullptr, Coupling coupling = Coupling::kJacobi);
  std::string name() const override;
  DecodeResult decode(const DecodeRequest& request) override;
  bool refills_rows() const override { return true; }

 private:
  CfgModel target_;
  SamplingParams params_;
  int64_t window_;
  ChainRule rule_;
  Coupling coupling_;
  IterationGraphs graphs_;              // the decode state's buffers and the iterations' graphs
  torch::Tensor column_, window_mask_;  // the window's columns and its block mask
  torch::Tensor token_draws_;           // [1, (window + 1) V]: each token's draw of a position's Gumbel noise

  // The carry's samples [B, W + 1] and the q each is stored with, from this forward's p and its samples y
  // (their uniforms u_carry) and the window's drafts with their q: SCD's couplings, or y as drawn (sjd.cpp).
  std::pair<torch::Tensor, torch::Tensor> couple(DecodeState& rows, const DecodeState::Span& cells,
                                                 const torch::Tensor& row_iteration, const torch::Tensor& drafts,
                                                 const torch::Tensor& q, const torch::Tensor& p, const torch::Tensor& y,
                                                 const torch::Tensor& u_carry) const;
};

}  // namespace vispec
