#include "models/checkpoints/weight_keys.h"

namespace vispec {

namespace {
// More blocks in one resolution level than any released VQ has (MoVQ's: 3); the names preset spells each out.
constexpr int64_t kMaxBlocksPerLevel = 16;

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool ends_with_any(const std::string& s, const std::vector<std::string>& suffixes) {
  for (const auto& suffix : suffixes)
    if (ends_with(s, suffix)) return true;
  return false;
}

// Replaces each occurrence of the dotted parts `from` that starts and ends on a part boundary.
std::string replace_parts(const std::string& name, const std::string& from, const std::string& to) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t hit = name.find(from, at);
    if (hit == std::string::npos) break;
    const size_t end = hit + from.size();
    const bool bounded = (hit == 0 || name[hit - 1] == '.') && (end == name.size() || name[end] == '.');
    out += name.substr(at, hit - at) + (bounded ? to : from);
    at = end;
  }
  return out + name.substr(at);
}
}  // namespace

bool WeightKeys::ignored(const std::string& file_name) const {
  if (!within.empty() && !starts_with(file_name, within)) return true;
  for (const auto& p : ignore)
    if (starts_with(file_name, p)) return true;
  return false;
}

std::string WeightKeys::map(const std::string& name) const {
  std::string n = !within.empty() && starts_with(name, within) ? name.substr(within.size()) : name;
  if (!strip_prefix.empty() && starts_with(n, strip_prefix)) n = n.substr(strip_prefix.size());
  for (const auto& [from, to] : renames)
    if (starts_with(n, from)) {
      n = to + n.substr(from.size());
      break;
    }
  for (const auto& [from, to] : part_renames) n = replace_parts(n, from, to);
  return n;
}

bool WeightKeys::may_be_one_row(const std::string& module_name) const {
  return ends_with_any(module_name, one_row_for_all);
}

bool WeightKeys::is_conv1x1_from_linear(const std::string& module_name) const {
  return ends_with_any(module_name, linear_as_conv1x1);
}

bool weight_names_preset(const std::string& name, WeightKeys& keys) {
  // Inside every layer, Llama's names for the parts of LlamaGen's block.
  const std::vector<std::pair<std::string, std::string>> llama_layer = {
      {"self_attn.q_proj", "attention.wq"},     {"self_attn.k_proj", "attention.wk"},
      {"self_attn.v_proj", "attention.wv"},     {"self_attn.o_proj", "attention.wo"},
      {"self_attn.q_norm", "attention.q_norm"}, {"self_attn.k_norm", "attention.k_norm"},
      {"mlp.gate_proj", "feed_forward.w1"},     {"mlp.up_proj", "feed_forward.w3"},
      {"mlp.down_proj", "feed_forward.w2"},     {"input_layernorm", "attention_norm"},
      {"post_attention_layernorm", "ffn_norm"}};
  if (name == "llamagen") return true;
  if (name == "hf_llama") {
    // Chameleon (Lumina-mGPT, Anole): model.*, lm_head; Emu3: text_model.model.*, text_model.lm_head (what
    // transformers saves; model.text_model.* as it names them in memory; model.*, lm_head in BAAI's own
    // files). Lumina-mGPT keeps its qk-norm as one row for every head.
    keys.ignore = {"model.vqmodel.", "vqmodel."};
    keys.renames = {{"text_model.model.embed_tokens.", "tok_embeddings."},
                    {"text_model.model.", ""},
                    {"text_model.lm_head.", "output."},
                    {"model.text_model.embed_tokens.", "tok_embeddings."},
                    {"model.text_model.", ""},
                    {"model.embed_tokens.", "tok_embeddings."},
                    {"model.", ""},
                    {"lm_head.", "output."}};
    keys.part_renames = llama_layer;
    keys.one_row_for_all = {"attention.q_norm.weight", "attention.q_norm.bias", "attention.k_norm.weight",
                            "attention.k_norm.bias"};
    return true;
  }
  if (name == "hf_janus") {
    keys.ignore = {"model.vision_model.", "model.aligner.", "model.vqmodel.", "lm_head."};
    keys.renames = {{"model.language_model.embed_tokens.", "tok_embeddings."},
                    {"model.language_model.", ""},
                    {"model.generation_embeddings.", "image_aligner.embeddings."},
                    {"model.generation_aligner.fc1.", "image_aligner.fc1."},
                    {"model.generation_aligner.hidden_layers.0.", "image_aligner.fc2."},
                    {"model.generation_head.", "image_head."}};
    keys.part_renames = llama_layer;
    return true;
  }
  if (name == "janus") {  // DeepSeek's release: language_model.model.*, gen_embed, gen_aligner.layers.{0,2}, gen_head
    keys.ignore = {"vision_model.", "aligner.", "gen_vision_model.", "language_model.lm_head."};
    keys.renames = {{"language_model.model.embed_tokens.", "tok_embeddings."},
                    {"language_model.model.", ""},
                    {"gen_embed.", "image_aligner.embeddings."},
                    {"gen_aligner.layers.0.", "image_aligner.fc1."},
                    {"gen_aligner.layers.2.", "image_aligner.fc2."},
                    {"gen_head.output_mlp_projector.", "image_head.proj_out."},
                    {"gen_head.vision_head.", "image_head.vision_head."}};
    keys.part_renames = llama_layer;
    return true;
  }
  return false;
}

bool vq_weight_names_preset(const std::string& name, int64_t levels, WeightKeys& keys) {
  // taming-transformers' names of the parts of LlamaGen's VQ (its decoder's up.0 the lowest resolution, as ours).
  const std::vector<std::pair<std::string, std::string>> taming = {{"mid.block_1", "mid.0"}, {"mid.attn_1", "mid.1"},
                                                                   {"mid.block_2", "mid.2"}, {"up", "conv_blocks"},
                                                                   {"down", "conv_blocks"},  {"block", "res"}};
  if (name == "llamagen") return true;
  if (name == "hf_janus") {
    keys.within = "model.vqmodel.";
    keys.part_renames = taming;
    return true;
  }
  if (name == "chameleon") {  // taming's own layout: decoder.up.i is level i counted from the highest resolution
    keys.ignore = {"loss."};
    for (int64_t i = 0; i < levels; ++i)
      keys.renames.push_back(
          {"decoder.up." + std::to_string(i) + ".", "decoder.conv_blocks." + std::to_string(levels - 1 - i) + "."});
    keys.part_renames = taming;
    return true;
  }
  if (name == "janus") {
    keys.within = "gen_vision_model.";
    return true;
  }
  if (name == "emu3") {  // BAAI's Emu3-VisionTokenizer: our MoVQ's names; its encoder is not read
    keys.ignore = {"encoder.", "quant_conv."};
    return true;
  }
  if (name == "hf_emu3") {  // transformers' Emu3VQVAE inside Emu3-Gen-hf: BAAI's network under other names
    keys.within = "vqmodel.";
    keys.ignore = {"vqmodel.encoder.", "vqmodel.quant_conv."};
    keys.part_renames = {{"middle_block", "mid"}, {"up_block.up", "up"}, {"mid.attn_norm", "mid.attn_1.norm"},
                         {"q_proj", "q"},         {"k_proj", "k"},       {"v_proj", "v"},
                         {"out_proj", "proj_out"}};
    // A level's attention norms: attn_norms.M.* -> attn.M.norm.* (M counts the level's blocks).
    for (int64_t m = 0; m < kMaxBlocksPerLevel; ++m)
      keys.part_renames.push_back({"attn_norms." + std::to_string(m), "attn." + std::to_string(m) + ".norm"});
    keys.linear_as_conv1x1 = {".q.weight", ".k.weight", ".v.weight", ".proj_out.weight"};
    return true;
  }
  return false;
}

}  // namespace vispec
