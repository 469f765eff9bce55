#include "models/model_config.h"

#include <cstdlib>
#include <filesystem>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <tuple>

#include "core/check.h"
#include "io/model_dtype.h"
#include "io/yaml_util.h"

namespace vispec {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// A section's whole-number fields, each declared once: its key, its member, and its bounds (sizes at least 1,
// since a zero would divide by zero or build an empty model; counts of options at least 0; and at most what the
// largest real models have, many times over, so that a typo (dim: 1000000000) is refused here in one line, not
// by LibTorch's allocator or a shape check deep inside a forward). The key list, the reads and the checks all
// come from such a table.
template <class Config>
struct WholeField {
  const char* key;
  int64_t Config::*member;
  int64_t least, most;
};

template <class Config, size_t N>
void read_whole_fields(const YamlView& v, Config& c, const WholeField<Config> (&fields)[N]) {
  for (const auto& f : fields) c.*f.member = v.get<int64_t>(f.key, c.*f.member);
}

// After every field is read (a preset or a default may be the value out of bounds): the first one out of its
// bounds, named at its line (or at the section's, for a default).
template <class Config, size_t N>
void check_whole_fields(const YamlView& v, const Config& c, const WholeField<Config> (&fields)[N]) {
  const auto at = [&](const char* key) { return v.has(key) ? v.at(key) : v; };
  for (const auto& f : fields)
    if (c.*f.member < f.least)
      at(f.key).fail(std::string(f.key) + (f.least == 1 ? " must be at least 1" : " must not be negative"));
  for (const auto& f : fields)
    if (c.*f.member > f.most)
      at(f.key).fail(std::string(f.key) + " must be at most " + std::to_string(f.most) + ", got " +
                     std::to_string(c.*f.member));
}

template <class Config, size_t N>
void add_keys(std::vector<std::string>& keys, const WholeField<Config> (&fields)[N]) {
  for (const auto& f : fields) keys.push_back(f.key);
}

constexpr WholeField<GptConfig> kGptWholeFields[] = {
    {"vocab_size", &GptConfig::vocab_size, 1, 1 << 22},
    {"dim", &GptConfig::dim, 1, 1 << 16},
    {"n_layer", &GptConfig::n_layer, 1, 1024},
    {"n_head", &GptConfig::n_head, 1, 1024},
    {"n_kv_head", &GptConfig::n_kv_head, 0, 1024},
    {"multiple_of", &GptConfig::multiple_of, 1, 1 << 16},
    {"grid_size", &GptConfig::grid_size, 1, 512},
    {"num_classes", &GptConfig::num_classes, 0, 1 << 22},
    {"cls_token_num", &GptConfig::cls_token_num, 1, 1 << 16},
    {"caption_dim", &GptConfig::caption_dim, 0, 1 << 16},
    {"ffn_hidden_size", &GptConfig::ffn_hidden_size, 0, 1 << 20},
    {"text_vocab_size", &GptConfig::text_vocab_size, 0, 1 << 22},
    {"image_token_offset", &GptConfig::image_token_offset, 0, 1 << 22},
    {"image_embed_dim", &GptConfig::image_embed_dim, 0, 1 << 20},
    {"image_mlp_dim", &GptConfig::image_mlp_dim, 0, 1 << 20},
};
// Its real-number fields, and the rest of its keys (read below: words, the weights' naming, a special check).
constexpr std::pair<const char*, double GptConfig::*> kGptRealFields[] = {
    {"ffn_dim_multiplier", &GptConfig::ffn_dim_multiplier},
    {"rope_base", &GptConfig::rope_base},
    {"norm_eps", &GptConfig::norm_eps},
};
constexpr const char* kGptOtherKeys[] = {"weights", "preset",         "rope",         "qkv",
                                         "qk_norm", "image_input",    "image_output", "eol_token",
                                         "names",   "state_dict_key", "strip_prefix", "rename"};

// base: the defaults (a drafter starts from its target: same vocabulary, grid and conditioning).
GptConfig parse_gpt(const YamlView& v, const GptConfig& base = GptConfig{}) {
  std::vector<std::string> known;
  add_keys(known, kGptWholeFields);
  for (const auto& [key, member] : kGptRealFields) known.push_back(key);
  known.insert(known.end(), std::begin(kGptOtherKeys), std::end(kGptOtherKeys));
  v.reject_unknown_keys(known);
  GptConfig c = base;
  if (v.has("preset")) {
    const auto preset = gpt_preset(v.need<std::string>("preset"));
    c.dim = preset.dim;
    c.n_layer = preset.n_layer;
    c.n_head = preset.n_head;
  }
  read_whole_fields(v, c, kGptWholeFields);
  for (const auto& [key, member] : kGptRealFields) c.*member = v.get<double>(key, c.*member);
  c.qk_norm = v.get<bool>("qk_norm", c.qk_norm);
  c.eol_token = v.get<int64_t>("eol_token", c.eol_token);
  // word(key, {(name, value), ...}): a key naming one of a few choices.
  auto word = [&](const char* key, auto current,
                  std::initializer_list<std::pair<const char*, decltype(current)>> choices) {
    if (!v.has(key)) return current;
    const auto got = v.need<std::string>(key);
    std::string names;
    for (const auto& [name, value] : choices) {
      if (got == name) return value;
      names += (names.empty() ? "" : " | ") + std::string(name);
    }
    v.at(key).fail("expected " + names + ", got '" + got + "'");
  };
  c.rope = word("rope", c.rope, {{"2d", RopeKind::grid_2d}, {"1d", RopeKind::sequence_1d}});
  c.fused_qkv = word("qkv", c.fused_qkv, {{"fused", true}, {"separate", false}});
  c.image_input = word("image_input", c.image_input,
                       {{"token_table", ImageInput::token_table}, {"aligner_mlp", ImageInput::aligner_mlp}});
  c.image_output =
      word("image_output", c.image_output, {{"linear", ImageOutput::linear}, {"head_mlp", ImageOutput::head_mlp}});
  check_whole_fields(v, c, kGptWholeFields);
  if (c.n_kv_head > 0 && c.n_head % c.n_kv_head != 0) v.at("n_kv_head").fail("must divide n_head");
  if (c.dim % c.n_head != 0) v.fail("dim must be a multiple of n_head");
  if (c.rope == RopeKind::grid_2d && c.head_dim() % 4 != 0)
    v.fail("head_dim (dim / n_head) must be a multiple of 4 for 2D RoPE");
  if (c.head_dim() % 2 != 0) v.fail("head_dim (dim / n_head) must be even for RoPE");
  if (c.prompted() && c.caption_dim > 0)
    v.at("caption_dim").fail("a prompted model (text_vocab_size) takes no captions");
  if (c.prompted() && c.image_token_offset + c.vocab_size > c.text_vocab_size)
    (v.has("image_token_offset") ? v.at("image_token_offset") : v.at("text_vocab_size"))
        .fail("image tokens " + std::to_string(c.image_token_offset) + " .. " +
              std::to_string(c.image_token_offset + c.vocab_size - 1) + " do not fit a text vocabulary of " +
              std::to_string(c.text_vocab_size));
  if (!c.prompted() && v.has("image_token_offset")) v.at("image_token_offset").fail("needs text_vocab_size");
  if (v.has("eol_token") &&
      (!c.prompted() || c.eol_token < 0 || c.eol_token >= c.text_vocab_size || c.rope != RopeKind::sequence_1d))
    v.at("eol_token")
        .fail("an end-of-line token is a token of the text vocabulary (text_vocab_size) of a 1D-RoPE model");
  if (c.image_input == ImageInput::aligner_mlp && c.image_embed_dim < 1)
    v.fail("image_input aligner_mlp needs image_embed_dim (the generation embedding's width)");
  if (c.image_output == ImageOutput::head_mlp && c.image_mlp_dim < 1)
    v.fail("image_output head_mlp needs image_mlp_dim (the generation head's hidden width)");
  return c;
}

// The VQ section's whole-number fields, and the rest of its keys (read below).
constexpr WholeField<VqConfig> kVqWholeFields[] = {
    {"temporal_downsample", &VqConfig::temporal_downsample, 1, 64},
    {"codebook_size", &VqConfig::codebook_size, 1, 1 << 22},
    {"codebook_embed_dim", &VqConfig::codebook_embed_dim, 1, 1 << 16},
    {"in_channels", &VqConfig::in_channels, 1, 1 << 10},
    {"z_channels", &VqConfig::z_channels, 1, 1 << 16},
    {"ch", &VqConfig::ch, 1, 1 << 16},
    {"num_res_blocks", &VqConfig::num_res_blocks, 0, 64},
    {"norm_groups", &VqConfig::norm_groups, 1, 1 << 16},
};
constexpr const char* kVqOtherKeys[] = {"weights",      "kind",  "codebook_l2_norm", "commit_beta",
                                        "ch_mult",      "names", "level_attention",  "state_dict_key",
                                        "strip_prefix", "rename"};

VqConfig parse_vq(const YamlView& v) {
  std::vector<std::string> known(std::begin(kVqOtherKeys), std::end(kVqOtherKeys));
  add_keys(known, kVqWholeFields);
  v.reject_unknown_keys(known);
  VqConfig c;
  const std::string kind = v.get<std::string>("kind", "taming");
  if (kind != "taming" && kind != "movq")
    v.at("kind").fail("expected taming (LlamaGen, Chameleon) or movq (Emu3), got '" + kind + "'");
  c.kind = kind == "movq" ? VqKind::movq : VqKind::taming;
  read_whole_fields(v, c, kVqWholeFields);
  c.codebook_l2_norm = v.get<bool>("codebook_l2_norm", c.kind == VqKind::movq ? false : c.codebook_l2_norm);
  if (c.kind == VqKind::movq && c.codebook_l2_norm)
    v.at("codebook_l2_norm").fail("a movq VQ looks codes up as they are");
  c.commit_beta = v.get<double>("commit_beta", c.commit_beta);
  c.ch_mult = v.get<std::vector<int64_t>>("ch_mult", c.ch_mult);
  c.level_attention = v.get<bool>("level_attention", c.level_attention);
  check_whole_fields(v, c, kVqWholeFields);
  if (c.ch_mult.empty()) v.fail("ch_mult must not be empty");
  for (int64_t m : c.ch_mult)
    if (m < 1) v.at("ch_mult").fail("every multiplier must be at least 1");
  if (c.kind == VqKind::movq && c.z_channels != c.codebook_embed_dim)
    v.fail("a movq VQ takes z_channels equal to codebook_embed_dim (its time layers stack both)");
  if ((c.temporal_downsample & (c.temporal_downsample - 1)) != 0)
    (v.has("temporal_downsample") ? v.at("temporal_downsample") : v).fail("temporal_downsample must be a power of two");
  return c;
}
// names (a family's preset), state_dict_key, strip_prefix, rename: {from: to, ...} of a gpt or vq section.
// levels: the VQ's (its decoder's levels are numbered the other way round in taming's checkpoints).
WeightKeys parse_weight_keys(const YamlView& v, bool vq, int64_t levels = 0) {
  WeightKeys k;
  if (v.has("names")) {
    const auto name = v.need<std::string>("names");
    if (vq ? !vq_weight_names_preset(name, levels, k) : !weight_names_preset(name, k))
      v.at("names").fail(
          std::string("expected ") +
          (vq ? "llamagen, hf_janus, janus, chameleon, emu3 or hf_emu3" : "llamagen, hf_llama, hf_janus or janus") +
          ", got '" + name + "'");
  }
  k.state_dict_key = v.get<std::string>("state_dict_key", "");
  k.strip_prefix = v.get<std::string>("strip_prefix", "");
  if (v.has("rename")) {
    const auto r = v.at("rename");
    size_t own = 0;
    for (const auto& key : r.keys()) {
      const auto to = r.need<std::string>(key);
      if (key.empty()) r.at(key).fail("an empty prefix would rename every tensor");
      k.renames.insert(k.renames.begin() + ptrdiff_t(own++), {key, to});  // before a preset's, in their order
    }
  }
  return k;
}
// A prompted model's LM head covers the whole text vocabulary; the model keeps the image tokens' rows, taken at
// load (the target's and a draft GPT of its family alike).
void take_image_head_rows(const GptConfig& gpt, WeightKeys& keys) {
  if (!gpt.prompted() || gpt.image_output != ImageOutput::linear) return;
  auto& rows = keys.take_rows["output.weight"];
  for (int64_t c = 0; c < gpt.vocab_size; ++c) rows.push_back(gpt.image_token_offset + c);
}

void reject_shared_keys(const YamlView& gpt, const std::string& why) {
  for (const char* key : {"vocab_size", "grid_size", "num_classes", "cls_token_num", "caption_dim", "text_vocab_size",
                          "image_token_offset", "eol_token"})
    if (gpt.has(key)) gpt.at(key).fail(why);
}

// A prompt section's template and unconditional stream (the target's, or MuLo-SD's drafter's own).
void parse_prompt_text(const YamlView& v, PromptConfig& p) {
  p.where = v.where();
  p.template_text = v.need<std::string>("template");
  const size_t at = p.template_text.find("{prompt}");
  if (at == std::string::npos || p.template_text.find("{prompt}", at + 1) != std::string::npos)
    v.at("template").fail("must hold {prompt} exactly once (where the prompt file's line goes)");
  if (v.has("unconditional") == v.has("unconditional_pad"))
    v.fail("give one of unconditional (the unconditional stream's text) or unconditional_pad (a pad token)");
  p.unconditional = v.get<std::string>("unconditional", "");
  p.unconditional_pad = v.get<std::string>("unconditional_pad", "");
}

// The paths of the files a model's release ships (weights, the text encoder, tokenizers): relative ones
// resolve against the config's `weights_root:` (itself relative to the config file, or absolute, or beginning
// with $VISPEC_MODELS), else against the config file's directory; each is recorded with the line that named
// it, for the one-line error of a missing file (check_weight_files_exist).
class WeightPaths {
 public:
  WeightPaths(const YamlView& root, ModelConfig& m) : m_(m) {
    base_ = std::filesystem::path(root.file()).parent_path();
    if (!root.has("weights_root")) return;
    const auto r = root.at("weights_root");
    auto dir = r.as<std::string>();
    m_.weights_root_where = r.where();
    const std::string variable = "$VISPEC_MODELS";
    if (dir.rfind(variable, 0) == 0) {
      const char* value = std::getenv("VISPEC_MODELS");
      // Unset: the paths keep the variable's name, and a job that reads them says what to set (a config is
      // also read where no weights are needed: a parse, a parameter count).
      if (value && *value) dir = std::string(value) + dir.substr(variable.size());
    }
    base_ = std::filesystem::path(dir).is_absolute() || dir.rfind(variable, 0) == 0 ? std::filesystem::path(dir)
                                                                                    : base_ / dir;
  }
  std::string operator()(const YamlView& v, const std::string& key) const {
    const std::filesystem::path p(v.need<std::string>(key));
    const auto path = p.is_absolute() ? p.string() : (base_ / p).lexically_normal().string();
    m_.weight_origins[path] = v.at(key).where();
    return path;
  }

 private:
  ModelConfig& m_;
  std::filesystem::path base_;
};

// prompt: {tokenizer, template, unconditional | unconditional_pad}: a prompted model's text prompt.
void parse_prompt(const YamlView& v, ModelConfig& m, const WeightPaths& files) {
  v.reject_unknown_keys({"tokenizer", "template", "unconditional", "unconditional_pad"});
  if (!m.gpt.prompted()) v.fail("only a prompted gpt (text_vocab_size) takes a prompt section");
  auto& p = m.prompt;
  p.present = true;
  const auto tokenizer = v.at("tokenizer");
  if (tokenizer.node().IsMap()) {
    tokenizer.reject_unknown_keys({"emu3_tiktoken", "emu3_vision_tokens"});
    p.emu3_tiktoken = files(tokenizer, "emu3_tiktoken");
    p.emu3_vision_tokens = files(tokenizer, "emu3_vision_tokens");
  } else {
    p.tokenizer_json = files(v, "tokenizer");
  }
  parse_prompt_text(v, p);
}

// drafters.mulo: {gpt: {weights, architecture overrides, names}, resamplers: {weights, width, blocks, kernel},
// prompt: {template, unconditional | unconditional_pad}}.
MuloDrafterConfig parse_mulo(const YamlView& v, const ModelConfig& m, const WeightPaths& weights) {
  v.reject_unknown_keys({"gpt", "resamplers", "prompt"});
  MuloDrafterConfig c;
  const auto g = v.at("gpt");
  reject_shared_keys(g,
                     "MuLo-SD's drafter shares the target's vocabulary and conditioning; its grid is half the "
                     "target's: leave it out");
  c.gpt = parse_gpt(g, m.gpt);
  c.gpt_keys = parse_weight_keys(g, /*vq=*/false);
  if (m.gpt.grid_size % 2 != 0) g.fail("MuLo-SD needs an even target grid (the drafter's is half of it)");
  c.gpt.grid_size = m.gpt.grid_size / 2;
  take_image_head_rows(c.gpt, c.gpt_keys);
  if (v.has_section("prompt")) {
    const auto p = v.at("prompt");
    p.reject_unknown_keys({"template", "unconditional", "unconditional_pad"});  // the tokenizer is the target's
    if (!m.prompt.present) p.fail("only a prompted model's drafter (the target has a prompt section) takes a prompt");
    c.own_prompt = true;
    c.prompt = m.prompt;  // the target's tokenizer
    parse_prompt_text(p, c.prompt);
  }
  c.gpt_weights = weights(g, "weights");
  const auto r = v.at("resamplers");
  r.reject_unknown_keys({"weights", "width", "blocks", "kernel"});
  c.resamplers.embed_dim = m.vq.codebook_embed_dim;
  c.resamplers.width = r.get<int64_t>("width", c.resamplers.width);
  c.resamplers.blocks = r.get<int64_t>("blocks", c.resamplers.blocks);
  c.resamplers.kernel = r.get<int64_t>("kernel", c.resamplers.kernel);
  if (c.resamplers.width < 1 || c.resamplers.blocks < 0 || c.resamplers.kernel < 1 || c.resamplers.kernel % 2 == 0)
    r.fail("width >= 1, blocks >= 0 and an odd kernel >= 1 please");
  c.resamplers_weights = weights(r, "weights");
  return c;
}
// text_encoder: {dir, weights, max_length, dtype}: a T5 encoder in Hugging Face's layout.
void parse_text_encoder(const YamlView& v, ModelConfig& m, const WeightPaths& weights) {
  v.reject_unknown_keys({"dir", "weights", "max_length", "dtype"});
  if (!m.gpt.text_conditional()) v.fail("only a text-conditional gpt (caption_dim > 0) takes a text encoder");
  m.has_text_encoder = true;
  m.text_encoder_dir = weights(v, "dir");
  if (v.has("weights")) m.text_encoder_weights = weights(v, "weights");
  m.text_encoder_max_length = v.get<int64_t>("max_length", m.gpt.cls_token_num);
  if (m.text_encoder_max_length < 1 || m.text_encoder_max_length > m.gpt.cls_token_num)
    v.at("max_length").fail("must be 1 to gpt.cls_token_num (" + std::to_string(m.gpt.cls_token_num) + ")");
  m.text_encoder_dtype = v.get<std::string>("dtype", m.dtype == "fp16" ? "bf16" : m.dtype);
  if (m.text_encoder_dtype != "fp32" && m.text_encoder_dtype != "bf16")
    v.at("dtype").fail("expected fp32 or bf16 (T5's activations overflow fp16)");
}
}  // namespace

int64_t ModelConfig::class_id(const std::string& prompt) const {
  const std::string p = lower(prompt);
  for (size_t i = 0; i < classes.size(); ++i)
    if (lower(classes[i]) == p) return int64_t(i);
  if (!p.empty() && std::all_of(p.begin(), p.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const int64_t id = std::stoll(p);
    if (id < gpt.num_classes) return id;
  }
  return -1;
}

namespace {
// sampling: {cfg_scale, temperature, top_k, top_p}, each optional, refused outside the ranges a decoder spec
// accepts.
SamplingDefaults parse_sampling(const YamlView& v) {
  v.reject_unknown_keys({"cfg_scale", "temperature", "top_k", "top_p"});
  SamplingDefaults d;
  if (v.has("cfg_scale")) d.cfg_scale = v.need<double>("cfg_scale");
  if (v.has("temperature")) d.temperature = v.need<double>("temperature");
  if (v.has("top_k")) d.top_k = v.need<int64_t>("top_k");
  if (v.has("top_p")) d.top_p = v.need<double>("top_p");
  if (d.cfg_scale && !(*d.cfg_scale >= 0 && *d.cfg_scale <= 1e6)) v.at("cfg_scale").fail("must be in [0, 1e6]");
  if (d.temperature && !(*d.temperature >= 0 && *d.temperature <= 1e6)) v.at("temperature").fail("must be in [0, 1e6]");
  if (d.top_k && (*d.top_k < 0 || *d.top_k > (int64_t(1) << 30))) v.at("top_k").fail("must be in [0, 2^30]");
  if (d.top_p && !(*d.top_p > 0 && *d.top_p <= 1)) v.at("top_p").fail("must be in (0, 1]");
  return d;
}
}  // namespace

ModelConfig load_model_config(const std::string& path) {
  YamlView root(load_yaml_file(path), path);
  root.reject_unknown_keys({"name", "dtype", "weights_root", "classes", "sampling", "gpt", "vq", "text_encoder",
                            "prompt", "classifier", "drafters"});
  ModelConfig m;
  m.file = path;
  const WeightPaths weights(root, m);
  m.name = root.need<std::string>("name");
  m.dtype = root.get<std::string>("dtype", m.dtype);
  if (!is_model_dtype(m.dtype)) root.at("dtype").fail("expected fp32, bf16 or fp16, got '" + m.dtype + "'");
  if (root.has_section("sampling")) m.sampling = parse_sampling(root.at("sampling"));
  const auto gpt = root.at("gpt"), vq = root.at("vq");
  m.gpt = parse_gpt(gpt);
  m.vq = parse_vq(vq);
  m.gpt_weights = weights(gpt, "weights");
  m.vq_weights = weights(vq, "weights");
  m.gpt_keys = parse_weight_keys(gpt, /*vq=*/false);
  take_image_head_rows(m.gpt, m.gpt_keys);
  m.vq_keys = parse_weight_keys(vq, /*vq=*/true, int64_t(m.vq.ch_mult.size()));
  if (root.has("classes")) {
    m.classes = root.need<std::vector<std::string>>("classes");
    if (int64_t(m.classes.size()) != m.gpt.num_classes)
      root.at("classes").fail("lists " + std::to_string(m.classes.size()) + " names but gpt.num_classes is " +
                              std::to_string(m.gpt.num_classes));
  }
  if (root.has_section("text_encoder")) parse_text_encoder(root.at("text_encoder"), m, weights);
  if (root.has_section("prompt")) parse_prompt(root.at("prompt"), m, weights);
  if (root.has_section("classifier")) {
    const auto cls = root.at("classifier");
    cls.reject_unknown_keys({"weights", "width", "features"});
    m.has_classifier = true;
    m.classifier_weights = weights(cls, "weights");
    m.classifier.in_channels = m.vq.in_channels;
    m.classifier.image_size = m.image_size();
    m.classifier.num_classes = m.gpt.num_classes;
    m.classifier.width = cls.get<int64_t>("width", m.classifier.width);
    m.classifier.features = cls.get<int64_t>("features", m.classifier.features);
    if (m.image_size() % 8 != 0) cls.fail("the classifier needs an image size that is a multiple of 8");
  }
  if (root.has_section("drafters")) {
    const auto d = root.at("drafters");
    d.reject_unknown_keys({"gpt", "eagle_head", "ssd_heads", "mulo"});
    if (d.has_section("gpt")) {
      const auto g = d.at("gpt");
      reject_shared_keys(g, "a drafter shares the target's vocabulary, grid and conditioning: leave it out");
      m.draft_gpt = parse_gpt(g, m.gpt);
      // A smaller released model of the target's family (Janus-Pro-1B for 7B) drafts in its own file's names.
      m.draft_gpt_keys = parse_weight_keys(g, /*vq=*/false);
      take_image_head_rows(m.draft_gpt, m.draft_gpt_keys);
      m.draft_gpt_weights = weights(g, "weights");
    }
    if (d.has_section("mulo")) m.mulo = parse_mulo(d.at("mulo"), m, weights);
    if (d.has("eagle_head")) m.eagle_head = weights(d, "eagle_head");
    if (d.has("ssd_heads")) m.ssd_heads = weights(d, "ssd_heads");
  }
  if (m.gpt.vocab_size != m.vq.codebook_size)
    gpt.at("vocab_size").fail("must equal vq.codebook_size (" + std::to_string(m.vq.codebook_size) + ")");
  return m;
}

void apply_weight_overrides(ModelConfig& m, const std::vector<WeightOverride>& overrides) {
  for (const auto& o : overrides) {
    const auto missing = [&](const char* section, const char* what) {
      VISPEC_FAIL(o.where, ": ", m.file, " has no ", section, " section (", what,
                  "), so there are no weights of it "
                  "to replace");
    };
    if (o.field == "gpt.weights") m.gpt_weights = o.path;
    else if (o.field == "vq.weights") m.vq_weights = o.path;
    else if (o.field == "drafters.eagle_head") m.eagle_head = o.path;
    else if (o.field == "drafters.ssd_heads") m.ssd_heads = o.path;
    else if (o.field == "classifier.weights") {
      if (!m.has_classifier) missing("classifier", "its width");
      m.classifier_weights = o.path;
    } else if (o.field == "text_encoder.dir" || o.field == "text_encoder.weights") {
      if (!m.has_text_encoder) missing("text_encoder", "its maximum length and dtype");
      (o.field == "text_encoder.dir" ? m.text_encoder_dir : m.text_encoder_weights) = o.path;
    } else if (o.field == "drafters.gpt.weights") {
      if (!m.has_draft_gpt()) missing("drafters.gpt", "the draft GPT's architecture");
      m.draft_gpt_weights = o.path;
    } else if (o.field == "drafters.mulo.gpt.weights" || o.field == "drafters.mulo.resamplers.weights") {
      if (!m.has_mulo()) missing("drafters.mulo", "the drafter's architecture");
      (o.field == "drafters.mulo.gpt.weights" ? m.mulo.gpt_weights : m.mulo.resamplers_weights) = o.path;
    } else {
      VISPEC_FAIL(o.where, ": not a weight path of a model config");
    }
    m.weight_origins[o.path] = o.where;
  }
}

void check_weight_files_exist(const ModelConfig& m, const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    if (path.empty()) continue;
    const auto origin = m.weight_origins.find(path);
    const std::string where = origin == m.weight_origins.end() ? m.file : origin->second;
    VISPEC_CHECK(path.rfind("$VISPEC_MODELS", 0) != 0, where, ": ", path, ": VISPEC_MODELS is not set (",
                 m.weights_root_where,
                 " names it): export VISPEC_MODELS=DIR, the directory that holds the checkpoints");
    std::error_code ec;
    const bool found = std::filesystem::exists(path, ec);
    VISPEC_CHECK(!ec, where, ": ", path, ": ", ec.message());
    const bool in_config = where.rfind(m.file + ":", 0) == 0;
    const std::string base = !in_config                     ? "the job file's directory"
                             : m.weights_root_where.empty() ? "the model config's directory"
                                                            : m.weights_root_where;
    VISPEC_CHECK(found, where, ": ", path, ": no such file (a relative path is relative to ", base, ")");
  }
}

}  // namespace vispec
