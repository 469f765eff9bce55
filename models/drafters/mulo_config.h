// MuLo-SD's drafter, as a model config's `drafters.mulo` section names it (models/model_config.h): the target's
// GPT architecture at half the resolution (grid / 2: 16x16-pixel images -> an 8x8 grid, same VQ) and the
// resamplers U_2 / D_2 between the two grids (models/drafters/mulo_resamplers.h). On an LLM family (docs/
// model_families.md) the drafter is the family's model at half the resolution, with a prompt of its own.
#pragma once

#include <cstdint>
#include <string>

#include "models/gpt/gpt_config.h"
#include "models/text/prompt_config.h"
#include "models/checkpoints/weight_keys.h"

namespace vispec {

struct MuloResamplerConfig {
  int64_t embed_dim = 8;  // the VQ's code vector size
  int64_t width = 64;     // channels inside
  int64_t blocks = 2;     // residual blocks
  int64_t kernel = 3;
};

struct MuloDrafterConfig {
  GptConfig gpt;            // grid_size = the target's / 2
  std::string gpt_weights;  // vispec train gpt --mulo, or the target's family at half the resolution
  WeightKeys gpt_keys;      // such a family checkpoint's names (names:, as the target's)
  // A prompted target's drafter at half the resolution names its image size in its own prompt (Lumina-mGPT's
  // "Generate an image of 512x512", Emu3's "45*45"): its template and unconditional text, the target's
  // tokenizer. Absent: the drafter reads the target's prompts.
  bool own_prompt = false;
  PromptConfig prompt;
  MuloResamplerConfig resamplers;  // embed_dim = the VQ's
  std::string resamplers_weights;  // vispec train mulo-resamplers
};

}  // namespace vispec
