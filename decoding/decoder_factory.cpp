#include "decoding/decoder_factory.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "decoding/ar.h"
#include "decoding/eagle1.h"
#include "decoding/eagle2.h"
#include "decoding/mulo_sd.h"
#include "decoding/sd.h"
#include "decoding/sjd.h"
#include "decoding/ssd.h"
#include "decoding/zipar.h"
#include "models/load.h"

namespace vispec {

namespace {
const std::vector<std::string> kSamplingKeys = {"cfg_scale", "temperature", "top_k", "top_p"};
// Acceptance rule keys, shared by every speculative decoder that takes a rule.
const std::vector<std::string> kAcceptKeys = {"accept", "k", "delta", "lambda", "schedule", "budget", "nu", "mu",
                                              "slope", "optimal_resampling"};
const std::vector<std::string> kWordKeys = {"accept", "schedule", "tree"};

// Dynamic trees (EAGLE-2's builder) and static ones (EAGLE-1's, with draws without replacement).
bool uses_tree(const std::string& name) { return name == "eagle2" || name == "lantern" || name == "adt_tree"; }
bool uses_static_tree(const std::string& name) { return name == "eagle1" || name == "lanternpp" || name == "coolsd"; }
const std::vector<std::string> kAdtKeys = {"beta", "step_depth", "step_k", "min_depth", "max_depth", "min_k", "max_k"};

// Parameters each decoder accepts beyond the sampling chain.
std::vector<std::string> method_keys(const std::string& name) {
  if (name == "zipar") return {"window"};
  if (name == "mulo_sd") return {"tau", "k", "delta", "radius", "rows"};
  auto keys = kAcceptKeys;
  if (name == "sd") keys.push_back("gamma");
  if (name == "sjd") keys.push_back("window");
  if (name == "ssd") keys.insert(keys.end(), {"kh", "kv", "r", "b", "i"});
  if (uses_tree(name)) keys.insert(keys.end(), {"depth", "tree_k", "total_tokens"});
  if (uses_static_tree(name)) keys.push_back("tree");
  if (name == "adt_tree") keys.insert(keys.end(), kAdtKeys.begin(), kAdtKeys.end());
  return name == "ar" ? std::vector<std::string>{} : keys;
}

bool uses_draft_gpt(const std::string& name) { return name == "sd"; }
// AR and ZipAR have no drafts to accept or reject by a rule; MuLo-SD verifies with its own pooled-mass
// threshold (decoding/mulo_sd.cpp).
bool takes_rule(const std::string& name) {
  return name != "ar" && name != "zipar" && name != "mulo_sd";
}
bool uses_ssd_heads(const std::string& name) { return name == "ssd"; }
bool uses_eagle_head(const std::string& name) { return uses_tree(name) || uses_static_tree(name); }

// The rule a decoder uses when the job file does not name one: the method's own.
std::string default_rule(const std::string& name) {
  if (name == "lantern" || name == "lanternpp" || name == "coolsd") return name;
  return "exact";
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A whole-number parameter in [lo, hi], or the fallback when the job file leaves it out.
int64_t whole_number(const DecoderSpec& spec, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  const double v = spec.get(key, double(fallback));
  VISPEC_CHECK(v == std::floor(v) && v >= double(lo) && v <= double(hi), spec.where_of(key),
               ": must be a whole number in [", lo, ", ", hi, "]");
  return int64_t(v);
}

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }
}  // namespace

std::vector<std::string> known_decoders() {
  return {"ar", "sd", "eagle2", "lantern", "adt_tree", "eagle1", "lanternpp", "coolsd", "ssd", "mulo_sd", "sjd", "zipar"};
}

MuloParams mulo_params(const DecoderSpec& spec) {
  MuloParams p;
  p.tau = spec.get("tau", p.tau);
  p.delta = spec.get("delta", p.delta);
  p.k = whole_number(spec, "k", p.k, 1, 1 << 20);
  p.radius = whole_number(spec, "radius", p.radius, 0, 64);
  p.rows = whole_number(spec, "rows", p.rows, 1, 64);
  VISPEC_CHECK(p.tau >= 0, spec.where_of("tau"), ": must be >= 0 (above 1 rejects every draft)");
  VISPEC_CHECK(p.delta >= 0 && p.delta <= 1, spec.where_of("delta"), ": must be in [0, 1]");
  return p;
}

SsdParams ssd_params(const DecoderSpec& spec) {
  SsdParams p;
  p.kh = whole_number(spec, "kh", p.kh, 1, 64);
  p.kv = whole_number(spec, "kv", p.kv, 1, 8);
  p.r = whole_number(spec, "r", p.r, 0, 1024);
  p.b = whole_number(spec, "b", p.b, 0, 1024);
  p.i = whole_number(spec, "i", p.i, 0, 1024);
  return p;
}

StaticTree static_tree(const DecoderSpec& spec) {
  try {
    return named_static_tree(spec.word("tree", "naive_extend_57"));  // LANTERN++'s LlamaGen default
  } catch (const Error& e) {
    VISPEC_FAIL(spec.where_of("tree"), ": ", e.what());
  }
}

AdtParams adt_params(const DecoderSpec& spec) {
  AdtParams a;
  auto whole = [&](const char* key, int64_t fallback) {
    const double v = spec.get(key, double(fallback));
    VISPEC_CHECK(v == std::floor(v) && v >= 0, spec.where_of(key), ": must be a whole number >= 0");
    return int64_t(v);
  };
  a.beta = spec.get("beta", a.beta);
  a.step_depth = whole("step_depth", a.step_depth);
  a.step_k = whole("step_k", a.step_k);
  a.min_depth = whole("min_depth", a.min_depth);
  a.max_depth = whole("max_depth", a.max_depth);
  a.min_k = whole("min_k", a.min_k);
  a.max_k = whole("max_k", a.max_k);
  VISPEC_CHECK(a.min_depth <= a.max_depth && a.max_depth <= 32, spec.where_of("max_depth"),
               ": needs min_depth <= max_depth <= 32");
  VISPEC_CHECK(a.min_k >= 1 && a.min_k <= a.max_k && a.max_k <= 64, spec.where_of("max_k"),
               ": needs 1 <= min_k <= max_k <= 64");
  return a;
}

void validate_decoder_spec(const DecoderSpec& spec) {
  const auto names = known_decoders();
  VISPEC_CHECK(contains(names, spec.name), spec.name_where, ": unknown decoder '", spec.name, "' (known: ", join(names), ")");
  auto allowed = kSamplingKeys;
  for (const auto& k : method_keys(spec.name)) allowed.push_back(k);
  for (const auto& [key, value] : spec.params) {
    VISPEC_CHECK(contains(allowed, key), spec.where.at(key), ": unknown parameter for decoder '", spec.name,
                 "' (known: ", join(allowed), ")");
    VISPEC_CHECK(!contains(kWordKeys, key), spec.where.at(key), ": expected a word (e.g. exact, lantern), got a number");
  }
  for (const auto& [key, value] : spec.words) {
    VISPEC_CHECK(contains(allowed, key), spec.where.at(key), ": unknown parameter for decoder '", spec.name,
                 "' (known: ", join(allowed), ")");
    VISPEC_CHECK(contains(kWordKeys, key), spec.where.at(key), ": expected a number, got '", value, "'");
  }
  const auto p = sampling_params(spec);
  VISPEC_CHECK(p.temperature >= 0, spec.where_of("temperature"), ": must be >= 0");
  VISPEC_CHECK(p.top_k >= 0, spec.where_of("top_k"), ": must be >= 0 (0 = off)");
  VISPEC_CHECK(p.top_p > 0 && p.top_p <= 1, spec.where_of("top_p"), ": must be in (0, 1]");
  VISPEC_CHECK(p.cfg_scale >= 0, spec.where_of("cfg_scale"), ": must be >= 0");
  if (spec.name == "sd") {
    const double gamma = spec.get("gamma", 4);
    VISPEC_CHECK(gamma >= 1 && gamma <= 64 && gamma == std::floor(gamma), spec.where_of("gamma"),
                 ": must be a whole number in [1, 64]");
  }
  if (uses_tree(spec.name)) {
    const auto s = tree_shape(spec);
    VISPEC_CHECK(s.depth >= 0 && s.depth <= 32, spec.where_of("depth"), ": must be a whole number in [0, 32]");
    VISPEC_CHECK(s.top_k >= 1 && s.top_k <= 64, spec.where_of("tree_k"), ": must be a whole number in [1, 64]");
    VISPEC_CHECK(s.total_tokens >= 2 && s.total_tokens <= 1 + s.top_k + s.depth * s.top_k * s.top_k,
                 spec.where_of("total_tokens"), ": must be in [2, 1 + tree_k + depth tree_k^2]");
  }
  if (spec.name == "adt_tree") adt_params(spec);
  if (uses_static_tree(spec.name)) static_tree(spec);
  if (spec.name == "sjd") {
    const double w = spec.get("window", 15);
    VISPEC_CHECK(w >= 1 && w <= 64 && w == std::floor(w), spec.where_of("window"), ": must be a whole number in [1, 64]");
  }
  if (spec.name == "ssd") ssd_params(spec);
  if (spec.name == "mulo_sd") mulo_params(spec);
  if (spec.name == "zipar") {
    const double s = spec.get("window", 8);
    VISPEC_CHECK(s >= 1 && s <= 1024 && s == std::floor(s), spec.where_of("window"), ": must be a whole number in [1, 1024]");
  }
  if (takes_rule(spec.name)) acceptance_params(spec);
}

TreeShape tree_shape(const DecoderSpec& spec) {
  TreeShape s;  // LANTERN/ADT-Tree's LlamaGen defaults: 59 nodes, depth 4, top-k 10
  auto whole = [&](const char* key, int64_t fallback) {
    const double v = spec.get(key, double(fallback));
    VISPEC_CHECK(v == std::floor(v), spec.where_of(key), ": must be a whole number");
    return int64_t(v);
  };
  s.depth = whole("depth", s.depth);
  s.top_k = whole("tree_k", s.top_k);
  s.total_tokens = whole("total_tokens", s.total_tokens);
  return s;
}

void validate_decoder_spec(const DecoderSpec& spec, const ModelConfig& model) {
  validate_decoder_spec(spec);
  VISPEC_CHECK(!uses_draft_gpt(spec.name) || model.has_draft_gpt(), spec.name_where, ": decoder '", spec.name,
               "' drafts with a small GPT, but ", model.file, " has no drafters.gpt section");
  VISPEC_CHECK(!uses_eagle_head(spec.name) || !model.eagle_head.empty(), spec.name_where, ": decoder '", spec.name,
               "' drafts with an EAGLE head, but ", model.file, " has no drafters.eagle_head");
  VISPEC_CHECK(!uses_ssd_heads(spec.name) || !model.ssd_heads.empty(), spec.name_where, ": decoder '", spec.name,
               "' drafts with SSD heads, but ", model.file, " has no drafters.ssd_heads");
  VISPEC_CHECK(spec.name != "mulo_sd" || model.has_mulo(), spec.name_where, ": decoder 'mulo_sd' drafts at half "
               "resolution, but ", model.file, " has no drafters.mulo section");
  VISPEC_CHECK(!uses_tree(spec.name) || tree_shape(spec).top_k <= model.gpt.vocab_size, spec.where_of("tree_k"),
               ": larger than the vocabulary of ", model.file, " (", model.gpt.vocab_size, ")");
  VISPEC_CHECK(spec.name != "adt_tree" || adt_params(spec).max_k <= model.gpt.vocab_size, spec.where_of("max_k"),
               ": larger than the vocabulary of ", model.file, " (", model.gpt.vocab_size, ")");
  // k defaults to LANTERN's 1000, capped at the codebook's other codes; a k the job names must fit.
  if (takes_rule(spec.name) && acceptance_params(spec).needs_neighbours() && spec.params.count("k")) {
    const double k = spec.get("k", 0);
    VISPEC_CHECK(k < double(model.vq.codebook_size), spec.where_of("k"), ": ", int64_t(k), " neighbours but the codebook of ",
                 model.file, " has ", model.vq.codebook_size, " codes");
  }
}

SamplingParams sampling_params(const DecoderSpec& spec) {
  SamplingParams p;
  p.cfg_scale = spec.get("cfg_scale", p.cfg_scale);
  p.temperature = spec.get("temperature", p.temperature);
  p.top_k = int64_t(spec.get("top_k", double(p.top_k)));
  p.top_p = spec.get("top_p", p.top_p);
  return p;
}

AcceptanceParams acceptance_params(const DecoderSpec& spec) {
  AcceptanceParams a;
  // A bad word names its own field: "jobs/x.yaml:5: decoder.accept: unknown acceptance rule 'lanter' (...)".
  try {
    a.rule = parse_accept_rule(spec.word("accept", default_rule(spec.name)));
  } catch (const Error& e) {
    VISPEC_FAIL(spec.where_of("accept"), ": ", e.what());
  }
  try {
    a.schedule = parse_cool_schedule(spec.word("schedule", "exponential"));
  } catch (const Error& e) {
    VISPEC_FAIL(spec.where_of("schedule"), ": ", e.what());
  }
  // LANTERN's k is 1000; LANTERN++'s published settings use 10 (with lambda 3, 5) or 5.
  a.k = int64_t(spec.get("k", a.rule == AcceptRule::kLanternPlusPlus ? 10.0 : double(a.k)));
  a.delta = spec.get("delta", a.delta);
  a.lambda = spec.get("lambda", a.lambda);
  a.budget = spec.get("budget", a.budget);
  a.nu = spec.get("nu", a.nu);
  a.mu = spec.get("mu", a.mu);
  a.slope = spec.get("slope", a.slope);
  a.optimal_resampling = spec.get("optimal_resampling", 0) != 0;
  VISPEC_CHECK(a.k >= 1, spec.where_of("k"), ": must be >= 1");
  VISPEC_CHECK(a.delta > 0 && a.delta <= 1, spec.where_of("delta"), ": must be in (0, 1]");
  VISPEC_CHECK(a.lambda >= 1, spec.where_of("lambda"), ": must be >= 1");
  VISPEC_CHECK(a.budget > 0, spec.where_of("budget"), ": must be > 0");
  VISPEC_CHECK(a.nu >= 0, spec.where_of("nu"), ": must be >= 0");
  return a;
}

std::map<std::string, std::string> decoder_weight_files(const DecoderSpec& spec, const ModelConfig& model) {
  std::map<std::string, std::string> files;
  if (uses_draft_gpt(spec.name) && model.has_draft_gpt()) files["draft_gpt"] = model.draft_gpt_weights;
  if (uses_eagle_head(spec.name) && !model.eagle_head.empty()) files["eagle_head"] = model.eagle_head;
  if (uses_ssd_heads(spec.name) && !model.ssd_heads.empty()) files["ssd_heads"] = model.ssd_heads;
  if (spec.name == "mulo_sd" && model.has_mulo()) {
    files["mulo_gpt"] = model.mulo.gpt_weights;
    files["mulo_resamplers"] = model.mulo.resamplers_weights;
  }
  return files;
}

DecoderModels load_decoder_models(const DecoderSpec& spec, const ModelConfig& model, Gpt target, VqModel vq,
                                  torch::Device device) {
  validate_decoder_spec(spec, model);
  DecoderModels m;
  m.target = std::move(target);
  // Drafters and heads run in the target's dtype: their features and its hidden states meet in one forward.
  const auto dtype = m.target->tok_embeddings->weight.scalar_type();
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  if (uses_draft_gpt(spec.name)) {
    m.draft_gpt = Gpt(model.draft_gpt, options, /*random_init=*/false);
    load_weights(*m.draft_gpt, model.draft_gpt_weights);
    m.draft_gpt->eval();
  }
  if (uses_eagle_head(spec.name)) {
    m.eagle = load_eagle_drafter(model.eagle_head, model);
    m.eagle->to(device, dtype);
    m.eagle->eval();
  }
  if (uses_ssd_heads(spec.name)) {
    m.ssd = load_ssd_heads(model.ssd_heads, model);
    const auto p = ssd_params(spec);
    VISPEC_CHECK(p.kh <= m.ssd->horizontal_count() && p.kv <= m.ssd->vertical_count(), spec.where_of("kv"), ": kh ",
                 p.kh, ", kv ", p.kv, " but ", model.ssd_heads, " has ", m.ssd->horizontal_count(), " horizontal and ",
                 m.ssd->vertical_count(), " vertical heads");
    m.ssd->to(device, dtype);
    m.ssd->eval();
  }
  if (spec.name == "mulo_sd") {
    m.mulo_gpt = Gpt(model.mulo.gpt, options, /*random_init=*/false);
    load_weights(*m.mulo_gpt, model.mulo.gpt_weights);
    m.mulo_gpt->eval();
    m.mulo_resamplers = MuloResamplers(model.mulo.resamplers);
    load_weights(*m.mulo_resamplers, model.mulo.resamplers_weights);
    m.mulo_resamplers->to(device, dtype);
    m.mulo_resamplers->eval();
    m.vq = vq;
  }
  const auto accept = takes_rule(spec.name) ? acceptance_params(spec) : AcceptanceParams{};
  // LANTERN's rules and MuLo-SD's pooled mass read the codebook's nearest neighbours.
  const int64_t k = spec.name == "mulo_sd" ? mulo_params(spec).k : accept.needs_neighbours() ? accept.k : 0;
  if (k > 0)
    m.neighbours = std::make_shared<const CodebookNeighbours>(CodebookNeighbours::cached(
        vq->quantize->embedding->weight, std::min(k, model.vq.codebook_size - 1), CodebookNeighbours::default_cache_dir()));
  return m;
}

std::unique_ptr<Decoder> make_decoder(const DecoderSpec& spec, const DecoderModels& models) {
  validate_decoder_spec(spec);
  const auto sampling = sampling_params(spec);
  auto accept = takes_rule(spec.name) ? acceptance_params(spec) : AcceptanceParams{};
  if (models.neighbours) accept.k = std::min(accept.k, models.neighbours->columns());
  if (spec.name == "ar") return std::make_unique<ArDecoder>(models.target, sampling);
  if (spec.name == "sd")
    return std::make_unique<SdDecoder>(models.target, models.draft_gpt, sampling, int64_t(spec.get("gamma", 4)), accept,
                                       models.neighbours);
  if (spec.name == "sjd")
    return std::make_unique<SjdDecoder>(models.target, sampling, int64_t(spec.get("window", 15)), accept, models.neighbours);
  if (spec.name == "ssd")
    return std::make_unique<SsdDecoder>(models.target, models.ssd, sampling, ssd_params(spec), accept, models.neighbours);
  if (spec.name == "mulo_sd")
    return std::make_unique<MuloSdDecoder>(models.target, models.mulo_gpt, models.mulo_resamplers, models.vq, sampling,
                                           mulo_params(spec), models.neighbours);
  if (spec.name == "zipar") return std::make_unique<ZipArDecoder>(models.target, sampling, int64_t(spec.get("window", 8)));
  if (uses_static_tree(spec.name))
    return std::make_unique<Eagle1Decoder>(spec.name, models.target, models.eagle, sampling, static_tree(spec), accept,
                                           models.neighbours);
  if (uses_tree(spec.name))
    return std::make_unique<Eagle2Decoder>(
        spec.name, models.target, models.eagle, sampling, tree_shape(spec), accept, models.neighbours,
        spec.name == "adt_tree" ? std::optional<AdtParams>(adt_params(spec)) : std::nullopt);
  VISPEC_FAIL(spec.name_where, ": unknown decoder '", spec.name, "'");
}

}  // namespace vispec
