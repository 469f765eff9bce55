// LlamaGen's reference fixtures (../shared/fixtures/llamagen; its README lists them): where they are, the
// skip every test that reads them takes on a machine without them, and the model config of their tiny models.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace vispec::test {

inline const std::string kLlamaGenFixtures = std::string(VISPEC_SOURCE_DIR) + "/../shared/fixtures/llamagen/";

#define VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES()                    \
  if (!std::filesystem::exists(::vispec::test::kLlamaGenFixtures)) \
  GTEST_SKIP() << "no " << ::vispec::test::kLlamaGenFixtures << " (the shared fixtures are not on this machine)"

// A model config (YAML text) of the fixture GPT of `kind` ("c2i" or "t2i") with the fixture VQ, as the
// fixtures' configs.json gives their LlamaGen arguments; `extra` is appended (a text_encoder section).
inline std::string llamagen_fixture_config(const std::string& kind, const std::string& extra = "") {
  const std::string conditioning =
      kind == "c2i" ? "num_classes: 10, cls_token_num: 1" : "caption_dim: 32, cls_token_num: 120";
  return "name: llamagen-fixture-" + kind + "\n" + "gpt: {weights: " + kLlamaGenFixtures + kind +
         "_gpt.safetensors, vocab_size: 256, dim: 64, n_layer: 2, n_head: 4, multiple_of: 32, grid_size: 8, " +
         conditioning + "}\n" + "vq: {weights: " + kLlamaGenFixtures +
         "vq.safetensors, codebook_size: 256, codebook_embed_dim: 8, ch: 32, ch_mult: [1, 1, 2, 2, 4], "
         "z_channels: 32, num_res_blocks: 2, norm_groups: 32}\n" +
         extra;
}

}  // namespace vispec::test
