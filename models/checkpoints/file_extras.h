// Buffers that LlamaGen's checkpoints carry beside their weights: the GPT's RoPE table and causal mask, which
// vispec recomputes, and the VQ's codebook usage counter, which it does not use. Every loader of a GPT or VQ file
// (models/checkpoints/load.h: load_weights, check_weights_file) ignores them, so a file that `vispec run` reads
// also trains, distils, evaluates and drafts.
#pragma once

#include <string>
#include <vector>

namespace vispec {

inline const std::vector<std::string> kGptFileExtras = {"freqs_cis", "causal_mask"};
inline const std::vector<std::string> kVqFileExtras = {"quantize.codebook_used"};

}  // namespace vispec
