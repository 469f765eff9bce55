#include "models/checkpoints/eagle_repo_names.h"

#include <torch/torch.h>

#include <map>
#include <optional>

#include "core/check.h"

namespace vispec {

namespace {
const char* const kPrefixes[] = {"", "module.", "ea_layer."};
const std::string kProbe = "layers.0.self_attn.q_proj.weight";

// The prefix the drafter's names are under, or nullopt if `tensors` are not such a drafter's.
std::optional<std::string> prefix_of(const TensorMap& tensors) {
  for (const char* p : kPrefixes)
    if (tensors.count(p + kProbe)) return std::string(p);
  return std::nullopt;
}
}  // namespace

bool is_eagle_repo_drafter(const TensorMap& tensors) { return prefix_of(tensors).has_value(); }

TensorMap eagle_repo_tensors(const TensorMap& tensors, bool fused_qkv, const std::string& path) {
  static const std::map<std::string, std::string> kNames = {
      {"fc.weight", "fc.weight"},
      {"fc.bias", "fc.bias"},
      {"layers.0.self_attn.o_proj.weight", "attention.wo.weight"},
      {"layers.0.post_attention_layernorm.weight", "ffn_norm.weight"},
      {"layers.0.mlp.gate_proj.weight", "feed_forward.w1.weight"},
      {"layers.0.mlp.up_proj.weight", "feed_forward.w3.weight"},
      {"layers.0.mlp.down_proj.weight", "feed_forward.w2.weight"},
      {"embed_tokens.weight", "embed_tokens.weight"},
  };
  const auto prefix = prefix_of(tensors).value_or("");
  TensorMap out;
  std::map<char, torch::Tensor> qkv;
  for (const auto& [file_name, t] : tensors) {
    VISPEC_CHECK(file_name.rfind(prefix, 0) == 0, path, ": tensor '", file_name, "' is not under '", prefix,
                 "' as the drafter's others are");
    const auto name = file_name.substr(prefix.size());
    VISPEC_CHECK(name.rfind("layers.", 0) != 0 || name.rfind("layers.0.", 0) == 0, path, ": '", file_name,
                 "': a drafter of more than one layer; vispec's EAGLE drafter has one, as EAGLE's and LANTERN's do");
    VISPEC_CHECK(name != "layers.0.input_layernorm.weight", path, ": '", file_name,
                 "': an input norm on the drafter's layer, which EAGLE's layer 0 does not have");
    if (name.size() == kProbe.size() && name.rfind("layers.0.self_attn.", 0) == 0 &&
        name.compare(name.size() - 12, 12, "_proj.weight") == 0 &&
        std::string("qkv").find(name[19]) != std::string::npos) {
      qkv[name[19]] = t;
      continue;
    }
    const auto it = kNames.find(name);
    out[it == kNames.end() ? name : it->second] = t;  // an unknown name stays itself: loading names it
  }
  VISPEC_CHECK(qkv.size() == 3, path, ": needs layers.0.self_attn.q_proj, k_proj and v_proj weights");
  if (fused_qkv) {
    out["attention.wqkv.weight"] = torch::cat({qkv['q'], qkv['k'], qkv['v']}, 0);
  } else {
    out["attention.wq.weight"] = qkv['q'];
    out["attention.wk.weight"] = qkv['k'];
    out["attention.wv.weight"] = qkv['v'];
  }
  return out;
}

}  // namespace vispec
