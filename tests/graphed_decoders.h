// The speculative decoders whose forwards and whole iterations run as static steps and graphs, built one way for
// every test that checks those properties (test_static_step.cpp, test_iteration_graphs.cpp): the tests differ in
// what they check and which decoders they check it on, never in how a decoder is set up.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decoding/common/decoder.h"
#include "decoding/common/sampling_params.h"
#include "models/drafters/ssd_heads.h"
#include "tiny_models.h"

namespace vispec::test {

// The models under them, in `dtype` on `device`: a target and SD's draft GPT on the 12x12 grid (144 tokens, so
// that steps and iterations cross three length buckets: 64, 128, 145 keys), SSD's heads, an EAGLE drafter and
// LANTERN's neighbour table for the target; and, on the CPU only, MuLo-SD's tiny pair (a 4x4 image).
struct GraphedDecoderModels {
  explicit GraphedDecoderModels(torch::Dtype dtype = torch::kFloat32, torch::Device device = torch::kCPU);
  Gpt target{nullptr}, drafter{nullptr};
  SsdHeads heads{nullptr};
  EagleDrafter eagle{nullptr};
  std::shared_ptr<const CodebookNeighbours> neighbours;
  std::optional<TinyMulo> mulo;
};

// Every name graphed_decoder knows: the decoders, and the acceptance rules that keep device tables of their own
// (Cool-SD's weights on SD's chains and on both kinds of tree).
extern const std::vector<std::string> kGraphedDecoders;

// The decoder `name` (one of kGraphedDecoders) over `m` with sampling `p`.
std::unique_ptr<Decoder> graphed_decoder(const std::string& name, const GraphedDecoderModels& m,
                                         const SamplingParams& p);

}  // namespace vispec::test
