#include "models/text/t5_config.h"

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

T5Config read_t5_config(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    VISPEC_FAIL(path, ": not JSON (", e.what(), ")");
  }
  VISPEC_CHECK(j.is_object(), path, ": expected a JSON object");
  auto integer = [&](const char* key, int64_t fallback) {
    if (!j.contains(key)) return fallback;
    VISPEC_CHECK(j[key].is_number_integer() && j[key].get<int64_t>() > 0, path, ": ", key,
                 ": expected a positive integer");
    return j[key].get<int64_t>();
  };
  T5Config c;
  if (j.contains("model_type"))
    VISPEC_CHECK(j["model_type"] == "t5", path, ": model_type: ", j["model_type"].dump(), ", expected \"t5\"");
  c.vocab_size = integer("vocab_size", c.vocab_size);
  c.d_model = integer("d_model", c.d_model);
  c.d_kv = integer("d_kv", c.d_kv);
  c.d_ff = integer("d_ff", c.d_ff);
  c.num_layers = integer("num_layers", c.num_layers);
  c.num_heads = integer("num_heads", c.num_heads);
  c.num_buckets = integer("relative_attention_num_buckets", c.num_buckets);
  c.max_distance = integer("relative_attention_max_distance", c.max_distance);
  if (j.contains("layer_norm_epsilon")) {
    VISPEC_CHECK(j["layer_norm_epsilon"].is_number(), path, ": layer_norm_epsilon: expected a number");
    c.eps = j["layer_norm_epsilon"].get<double>();
  }
  // Hugging Face's reading of feed_forward_proj: "[gated-]ACT", and "gated-gelu" means the tanh approximation.
  const std::string proj = j.value("feed_forward_proj", std::string("relu"));
  c.gated = proj.rfind("gated-", 0) == 0;
  c.activation = c.gated ? proj.substr(6) : proj;
  if (proj == "gated-gelu") c.activation = "gelu_new";
  VISPEC_CHECK(c.activation == "gelu_new" || c.activation == "gelu" || c.activation == "relu" || c.activation == "silu",
               path, ": feed_forward_proj: '", proj, "' is not supported (gated-gelu, relu, gelu, silu, gated-...)");
  VISPEC_CHECK(c.num_buckets >= 2 && c.max_distance > c.num_buckets / 4, path,
               ": relative_attention_num_buckets and relative_attention_max_distance do not fit together");
  return c;
}

}  // namespace vispec
