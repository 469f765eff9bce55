// How logits become a distribution: the sampling chain's settings (decoding/common/sampler.h runs them). Plain data,
// no torch: a decoder's parsed config (decoding/common/decoder_config.h) carries it to places that never see a tensor.
#pragma once

#include <cstdint>

namespace vispec {

struct SamplingParams {
  double cfg_scale = 1.0;    // classifier-free guidance; <= 1 runs the conditional stream only (LlamaGen)
  double temperature = 1.0;  // 0 = greedy
  int64_t top_k = 0;         // 0 = off
  double top_p = 1.0;        // 1 = off
  bool guided() const { return cfg_scale > 1.0; }
  bool greedy() const { return temperature <= 0.0; }
};

}  // namespace vispec
