// The decoder seam: a batch of conditions in, token grids and per-sample statistics out.
// Each decoder is one file of decoding/ that reads like its paper's algorithm; shared mechanics (sampling,
// CFG batching, KV bookkeeping) live beside it, each once.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "decoding/floor/sample_stats.h"
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
  int64_t batch() const { return int64_t(sample_ids.size()); }
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
};

}  // namespace vispec
