// The decoder seam: a batch of conditions in, token grids and per-sample statistics out.
// Each decoder is one file of decoding/ that reads like its paper's algorithm; shared mechanics (sampling,
// CFG batching, KV bookkeeping) live beside it, each once.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "decoding/common/sample_stats.h"
#include "models/gpt/conditions.h"

namespace vispec {

struct DecodeRequest {
  Conditions conditions;             // B class ids or captions (CPU)
  std::vector<uint64_t> sample_ids;  // B ids: with the seed, the key of every random draw of a sample
  uint64_t seed = 0;
  // MuLo-SD's drafter on a prompted model with a template of its own (drafters.mulo.prompt); else empty and
  // it reads `conditions`.
  Conditions drafter_conditions;
  const Conditions& drafter_conditions_or_target() const {
    return drafter_conditions.prompt_ids.defined() ? drafter_conditions : conditions;
  }
  // Rows decoded together: 0, every sample at once. With fewer rows than samples, a decoder that refills rows
  // (Decoder::refills_rows) gives a row whose image is done the next sample until none is left; one that does
  // not is given batches of `rows` samples.
  int64_t rows = 0;
  int64_t batch() const { return int64_t(sample_ids.size()); }  // the samples
  int64_t row_count() const { return rows > 0 ? std::min(rows, batch()) : batch(); }
};

struct DecodeResult {
  torch::Tensor tokens;            // [B, grid^2] int64, CPU, raster order
  std::vector<SampleStats> stats;  // B entries
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::string name() const = 0;
  virtual DecodeResult decode(const DecodeRequest& request) = 0;
  // Whether decode() refills rows (continuous batching): given more samples than rows, it keeps every row busy
  // until the last samples, a row whose image is done taking the next sample. A sample's tokens do not depend on
  // whether it started with the batch or took a row later.
  virtual bool refills_rows() const { return false; }
};

// `request` decoded request.row_count() rows at a time: by the decoder itself where it refills rows, else in
// consecutive batches of that many samples, their results joined in order.
DecodeResult decode_in_rows(Decoder& decoder, const DecodeRequest& request);

}  // namespace vispec
