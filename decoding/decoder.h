// The decoder seam: a batch of conditions in, token grids and per-sample statistics out.
// Each decoder is one file of decoding/ that reads like its paper's algorithm; shared mechanics (sampling,
// CFG batching, KV bookkeeping) live beside it, each once.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/conditions.h"

namespace vispec {

struct DecodeRequest {
  Conditions conditions;              // B class ids or captions (CPU)
  std::vector<uint64_t> sample_ids;   // B ids: with the seed, the key of every random draw of a sample
  uint64_t seed = 0;
  // MuLo-SD's drafter on a prompted model with a template of its own (drafters.mulo.prompt); else empty and
  // it reads `conditions`.
  Conditions drafter_conditions;
  const Conditions& drafter_conditions_or_target() const {
    return drafter_conditions.prompt_ids.defined() ? drafter_conditions : conditions;
  }
  int64_t batch() const { return int64_t(sample_ids.size()); }
};

// What every decoder reports per sample (docs/algorithms.md, "What every decoder reports").
struct SampleStats {
  int64_t target_forwards = 0;   // target passes this sample took part in
  int64_t draft_forwards = 0;    // drafter passes
  int64_t drafted = 0;           // drafted tokens offered for verification
  int64_t accepted = 0;          // of those, accepted
  int64_t tokens = 0;            // tokens committed
  double draft_ms = 0, verify_ms = 0, resample_ms = 0, bookkeeping_ms = 0;
  double tree_depth = 0;         // summed depth parameter of the trees drafted (tree decoders; ADT-Tree varies it)
  // A method's own figures, summed like the rest and written beside them (MuLo-SD: its step costs, set sizes).
  std::map<std::string, double> extra;

  SampleStats& operator+=(const SampleStats& o) {
    target_forwards += o.target_forwards;
    draft_forwards += o.draft_forwards;
    drafted += o.drafted;
    accepted += o.accepted;
    tokens += o.tokens;
    draft_ms += o.draft_ms;
    verify_ms += o.verify_ms;
    resample_ms += o.resample_ms;
    bookkeeping_ms += o.bookkeeping_ms;
    tree_depth += o.tree_depth;
    for (const auto& [key, value] : o.extra) extra[key] += value;
    return *this;
  }
  // Tokens committed per target forward (AR: 1).
  double mean_accepted_length() const { return target_forwards ? double(tokens) / double(target_forwards) : 0.0; }
  double acceptance_rate() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  // Mean tree depth over the trees drafted (one per target forward after the prefill); 0 without trees.
  double mean_tree_depth() const { return target_forwards > 1 ? tree_depth / double(target_forwards - 1) : 0.0; }
};

struct DecodeResult {
  torch::Tensor tokens;             // [B, grid^2] int64, CPU, raster order
  std::vector<SampleStats> stats;   // B entries
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::string name() const = 0;
  virtual DecodeResult decode(const DecodeRequest& request) = 0;
};

}  // namespace vispec
