#include "core/check.h"
#include "models/gpt/gpt_config.h"

namespace vispec {

GptConfig gpt_preset(const std::string& name) {
  GptConfig c;
  auto set = [&](int64_t layers, int64_t heads, int64_t dim) {
    c.n_layer = layers;
    c.n_head = heads;
    c.dim = dim;
  };
  if (name == "GPT-B") set(12, 12, 768);
  else if (name == "GPT-L") set(24, 16, 1024);
  else if (name == "GPT-XL") set(36, 20, 1280);
  else if (name == "GPT-XXL") set(48, 24, 1536);
  else if (name == "GPT-XXXL") set(48, 40, 2560);
  else if (name == "GPT-1B") set(22, 32, 2048);
  else if (name == "GPT-3B") set(24, 32, 3200);
  else if (name == "GPT-7B") set(32, 32, 4096);
  else
    VISPEC_FAIL("unknown GPT preset '", name,
                "' (known: GPT-B, GPT-L, GPT-XL, GPT-XXL, GPT-XXXL, GPT-1B, GPT-3B, GPT-7B)");
  return c;
}

}  // namespace vispec
