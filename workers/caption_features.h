// Precomputed caption features as text-to-image prompts: a prompt line "npy:FILE" names a .npy of the text
// encoder's outputs at the caption's L tokens, [L, caption_dim] or [1, L, caption_dim] (LlamaGen's feature
// extraction writes the latter), float32, float16 or float64, 1 <= L <= cls_token_num. Plain C++ (no torch):
// planning checks every file's header without loading a model.
#pragma once

#include <string>

#include "io/npy.h"
#include "models/gpt/gpt_config.h"

namespace vispec {

inline constexpr const char* kFeaturesPrefix = "npy:";

// FILE as written after "npy:", relative to the prompt file's directory unless absolute.
std::string resolve_features_path(const std::string& prompts_file, const std::string& file);
// "" if `path` holds caption features this model takes, else why not ("FILE: ...", one line): from its header.
std::string check_caption_features(const GptConfig& gpt, const std::string& path);
// The same judgement of an array already read from `path` (dtype and shape).
std::string caption_features_error(const GptConfig& gpt, const std::string& path, const NpyArray& array);

}  // namespace vispec
