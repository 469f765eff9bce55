// Random networks of a published model's shape, for measuring what a decoder costs where no weights are needed:
// the target of a GPT preset's shape (LlamaGen's GPT-XL by default) and the drafters a user would train or load
// for it, each sized as it is beside that target:
//   eagle_head  one decoder layer of the target's width over the target's frozen embedding, norm and head
//               (EAGLE-1/2, LANTERN, LANTERN++, Cool-SD, ADT-Tree)
//   gpt         LlamaGen's GPT-B on the target's grid, vocabulary and classes (SD's drafter)
//   ssd_heads   SSD's spatial heads at the target's width, as many as the decoder's settings read
//   mulo        MuLo-SD's drafter: the target's architecture on the half grid (its paper's ratio), the resamplers
//               U_2 / D_2 at their default width, and a VQ whose codebook they read
// A VQ's convolutions are never on a decode's path (only its codebook is: MuLo-SD's code vectors and nearest
// codes, LANTERN's neighbour table), so its encoder and decoder are made small.
// Where the target is cut to fewer layers than its preset (a CPU, where the real depth would take hours), the GPT
// drafters are cut in the same proportion, so that drafting keeps its share of an iteration.
#pragma once

#include <cstdint>
#include <string>

#include "decoding/common/decoder_registry.h"

namespace vispec {

struct ModelShape {
  std::string preset = "GPT-XL";  // models/gpt/gpt_presets
  int64_t layers = 0;             // 0: the preset's
  int64_t grid = 24;              // tokens per side (GPT-XL at 384 px: 24)
  int64_t vocab = 16384;          // LlamaGen's VQ-16 codebook
  int64_t classes = 1000;         // ImageNet's

  GptConfig target() const;
  std::string describe() const;  // "GPT-XL (36 layers, dim 1280, 20 heads), 24x24 grid (576 tokens), vocabulary 16384"
  bool real() const;             // the preset's depth on LlamaGen's 24x24 grid, with its vocabulary
};

// The shape a measurement runs: layers and grid 0 take the real ones on a GPU, and 4 layers on an 8x8 grid on a
// CPU, where the real shape would take hours (the reports say which ran).
ModelShape measured_shape(const std::string& preset, int64_t layers, int64_t grid, int64_t vocab, bool on_gpu);

// The target, random, in eval mode (seeded: the same weights in every run).
Gpt random_target(const ModelShape& shape, const torch::TensorOptions& options);

// The VQ codebook that every decoder's drafters and rules share, made on first use: LANTERN's neighbour table of
// 16384 codes takes seconds of sorting, so it is built once, with the most columns any decoder has asked for
// (LANTERN's 1000 at least; a rule reading fewer reads the first of them).
struct ShapeCodebook {
  VqModel vq{nullptr};
  std::shared_ptr<const CodebookNeighbours> neighbours;
};

// The networks `config`'s decoder reads beside `target`, random, in the target's dtype (the VQ in float32), in eval
// mode, and the codebook neighbours its rule reads (from `codebook`, made there if it has none yet).
DecoderModels random_decoder_models(const DecoderConfig& config, const ModelShape& shape, Gpt target,
                                    ShapeCodebook& codebook);

}  // namespace vispec
