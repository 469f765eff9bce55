// MuLo-SD: multi-scale drafting with local verification. The whole algorithm is in
// decoding/mulo_sd.cpp; this header holds its parameters, the decoder and the local expansion set.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "decoding/common/cfg_model.h"
#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decoder.h"
#include "decoding/common/iteration_graphs.h"
#include "models/drafters/mulo_resamplers.h"
#include "models/vq/vq.h"

namespace vispec {

// The locally expanded rejection set R_X (the MuLo-SD paper, Eq. 6-7): every cell u of the drafted span
// [span_begin, span_end) (raster indices on a grid `width` cells wide) within Chebyshev distance `radius` of a
// rejected cell t (|row_u - row_t| <= l and |col_u - col_t| <= l), and never before the first rejection t0
// (u >= t0). `rejected` need not be sorted; the result is sorted ascending (the order they are resampled in).
std::vector<int64_t> local_expansion(const std::vector<int64_t>& rejected, int64_t width, int64_t radius,
                                     int64_t span_begin, int64_t span_end);

// Paper 000's inference settings (supplementary "Implementation Details"): tau 1e-4, k 1000, delta 0.1, l 3.
struct MuloParams {
  double tau = 1e-4;   // accept a draft when the target mass pooled over A_{k,delta}(draft) reaches tau (Eq. 5)
  int64_t k = 1000;    // codebook neighbours considered for A_{k,delta} (capped at the codebook's other codes)
  double delta = 0.1;  // LANTERN's TVD budget that bounds A_{k,delta}
  int64_t radius = 3;  // l: the local expansion radius around each rejection
  int64_t rows = 1;    // low-res rows drafted per iteration (each becomes 2 high-res rows: L = 2 rows W tokens)
};

class MuloSdDecoder : public Decoder {
 public:
  // drafter: the target's architecture on the half-resolution grid (drafters.mulo.gpt); vq: the shared
  // tokenizer (its codebook maps tokens to the vectors the resamplers read and write).
  MuloSdDecoder(Gpt target, Gpt drafter, MuloResamplers resamplers, VqModel vq, SamplingParams params, MuloParams mulo,
                std::shared_ptr<const CodebookNeighbours> neighbours);
  std::string name() const override { return "mulo_sd"; }
  DecodeResult decode(const DecodeRequest& request) override;

 private:
  struct Run;  // one decode's state and steps (mulo_sd.cpp)

  CfgModel target_, drafter_;
  MuloResamplers resamplers_;
  VqModel vq_;
  SamplingParams params_;
  MuloParams mulo_;
  std::shared_ptr<const CodebookNeighbours> neighbours_;
  torch::Tensor neighbour_table_;  // [codes, columns] int64 on the target's device
  IterationGraphs graphs_;         // the decode state's buffers and the spans' drafting graphs
};

}  // namespace vispec
