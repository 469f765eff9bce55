// Small random models for tests: real LibTorch modules, seconds to run.
#pragma once

#include <memory>

#include "decoding/common/codebook_neighbours.h"
#include "decoding/mulo_sd.h"
#include "models/drafters/eagle_drafter.h"
#include "models/gpt/gpt.h"
#include "models/vq/vq.h"

namespace vispec::test {

// vocab 64, dim 32, 2 layers, 4 heads (head_dim 8), 4x4 grid, 3 classes.
GptConfig tiny_gpt_config();
// weights ~ N(0, 0.3): logits far from uniform. vocab: a smaller one makes exact distributions cheap.
Gpt tiny_gpt(uint64_t seed = 1, int64_t vocab = 64);
// The tiny GPT on a grid of grid x grid tokens (12: 144 tokens, whose steps cross three length buckets of the
// static cache: 64, 128, 145 keys), weights ~ N(0, 0.3), in `dtype` on `device`.
Gpt tiny_grid_gpt(uint64_t seed, int64_t grid, torch::Dtype dtype = torch::kFloat32,
                  torch::Device device = torch::kCPU);
// The tiny GPT on a grid x grid image over `vocab` codes: grid 2 and vocab 4 give 256 whole sequences, few enough
// for a chi-square over every one of them.
Gpt tiny_sequence_gpt(uint64_t seed, int64_t grid, int64_t vocab);
VqConfig tiny_vq_config();
// An EAGLE drafter for a target of config c, weights ~ N(0, 0.3), in eval mode.
EagleDrafter tiny_eagle_drafter(const GptConfig& c, uint64_t seed);
// A tiny target (4x4 grid, vocab 64) and a MuLo drafter for it: the same GPT family on a 2x2 grid, a VQ
// codebook of 64 codes and resamplers, all random.
struct TinyMulo {
  Gpt target = tiny_gpt(1);
  Gpt drafter{nullptr};
  VqModel vq{nullptr};
  MuloResamplers resamplers{nullptr};
  std::shared_ptr<const CodebookNeighbours> neighbours;
  TinyMulo();
  MuloSdDecoder decoder(const SamplingParams& sampling, MuloParams p) const {
    return MuloSdDecoder(target, drafter, resamplers, vq, sampling, p, neighbours);
  }
};

}  // namespace vispec::test
