#include "decoding/decoder_registry.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/check.h"
#include "models/load.h"
#include "models/model_config.h"

namespace vispec {

namespace {
// Function-local, so that registrations from other files' static initialisers find it constructed.
std::map<std::string, DecoderEntry>& registry() {
  static std::map<std::string, DecoderEntry> entries;
  return entries;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

const DecoderEntry& entry_for(const DecoderSpec& spec) {
  const auto it = registry().find(spec.name);
  VISPEC_CHECK(it != registry().end(), spec.name_where, ": unknown decoder '", spec.name, "' (known: ",
               join(known_decoders()), ")");
  return it->second;
}

// The fields every decoder reads, and then its own (the same code for the defaults and for the job's fields).
DecoderConfig read_config(const DecoderEntry& entry, DecoderFields& f, const SamplingDefaults& model = {}) {
  DecoderConfig c;
  c.name = entry.name;
  c.spec = f.spec();
  c.drafters = entry.drafters;
  c.sampling.cfg_scale = model.cfg_scale.value_or(c.sampling.cfg_scale);
  c.sampling.temperature = model.temperature.value_or(c.sampling.temperature);
  c.sampling.top_k = model.top_k.value_or(c.sampling.top_k);
  c.sampling.top_p = model.top_p.value_or(c.sampling.top_p);
  c.sampling.cfg_scale = f.number("cfg_scale", c.sampling.cfg_scale);
  f.require(c.sampling.cfg_scale >= 0, "cfg_scale", "must be >= 0");
  c.sampling.temperature = f.number("temperature", c.sampling.temperature);
  f.require(c.sampling.temperature >= 0, "temperature", "must be >= 0");
  c.sampling.top_k = f.whole("top_k", c.sampling.top_k, 0, int64_t(1) << 30);
  c.sampling.top_p = f.number("top_p", c.sampling.top_p);
  f.require(c.sampling.top_p > 0 && c.sampling.top_p <= 1, "top_p", "must be in (0, 1]");
  entry.read(f, c);
  if (c.takes_rule && c.accept.needs_neighbours()) c.neighbours = c.accept.k;
  c.numbers = f.numbers();
  c.words = f.words();
  c.unset = f.unset();
  return c;
}

struct DrafterInfo {
  const char* what;     // "drafts with a small GPT"
  const char* section;  // "drafters.gpt"
};
DrafterInfo drafter_info(Drafter d) {
  switch (d) {
    case Drafter::kDraftGpt: return {"drafts with a small GPT", "drafters.gpt"};
    case Drafter::kEagleHead: return {"drafts with an EAGLE head", "drafters.eagle_head"};
    case Drafter::kSsdHeads: return {"drafts with SSD heads", "drafters.ssd_heads"};
    case Drafter::kMulo: return {"drafts at half resolution", "drafters.mulo"};
  }
  VISPEC_ASSERT(false);
}

bool drafter_configured(Drafter d, const ModelConfig& model) {
  switch (d) {
    case Drafter::kDraftGpt: return model.has_draft_gpt();
    case Drafter::kEagleHead: return !model.eagle_head.empty();
    case Drafter::kSsdHeads: return !model.ssd_heads.empty();
    case Drafter::kMulo: return model.has_mulo();
  }
  VISPEC_ASSERT(false);
}

bool reads(const DecoderConfig& c, Drafter d) {
  return std::find(c.drafters.begin(), c.drafters.end(), d) != c.drafters.end();
}

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
}  // namespace

void read_rule(DecoderFields& fields, DecoderConfig& config, const std::string& default_rule) {
  config.accept = read_acceptance(fields, default_rule);
  config.takes_rule = true;
}

DecoderRegistration::DecoderRegistration(DecoderEntry entry) {
  VISPEC_ASSERT(entry.read && entry.build, "decoder '", entry.name, "' registered without read or build");
  const auto name = entry.name;
  VISPEC_ASSERT(registry().emplace(name, std::move(entry)).second, "decoder '", name, "' registered twice");
}

std::vector<std::string> known_decoders() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : registry()) names.push_back(name);
  return names;
}

DecoderConfig parse_decoder(const DecoderSpec& spec) { return parse_decoder(spec, SamplingDefaults{}); }

DecoderConfig parse_decoder(const DecoderSpec& spec, const SamplingDefaults& model_defaults) {
  const auto& entry = entry_for(spec);
  // First the fields the decoder knows (its reading code over no fields), so that a misspelt field is named
  // as such before any other field's check runs.
  auto known_fields = DecoderFields::defaults(spec.name);
  const auto known = read_config(entry, known_fields);
  std::vector<std::string> keys;
  for (const auto& [k, v] : known.numbers) keys.push_back(k);
  for (const auto& [k, v] : known.words) keys.push_back(k);
  keys.insert(keys.end(), known.unset.begin(), known.unset.end());
  std::sort(keys.begin(), keys.end());
  auto check_known = [&](const std::string& key) {
    VISPEC_CHECK(std::binary_search(keys.begin(), keys.end(), key), spec.where_of(key),
                 ": unknown parameter for decoder '", spec.name, "' (known: ", join(keys), ")");
  };
  for (const auto& [key, value] : spec.params) check_known(key);
  for (const auto& [key, value] : spec.words) check_known(key);
  DecoderFields fields(spec);
  return read_config(entry, fields, model_defaults);
}

void check_decoder_model(const DecoderConfig& c, const ModelConfig& model) {
  for (const Drafter d : c.drafters) {
    const auto info = drafter_info(d);
    VISPEC_CHECK(drafter_configured(d, model), c.spec.name_where, ": decoder '", c.name, "' ", info.what, ", but ",
                 model.file, " has no ", info.section, " section");
  }
  // k defaults to LANTERN's 1000, capped at the codebook's other codes (load_decoder_models); a k the job
  // names must fit, unless it names that default, capped alike: a run's kept job (OUT/job.yaml) names every
  // default and must read back.
  if (c.neighbours > 0 && c.spec.params.count("k") && c.neighbours != AcceptanceParams{}.k)
    VISPEC_CHECK(c.neighbours < model.vq.codebook_size, c.spec.where_of("k"), ": ", c.neighbours,
                 " neighbours but the codebook of ", model.file, " has ", model.vq.codebook_size, " codes");
  const auto& entry = entry_for(c.spec);
  if (entry.check_model) entry.check_model(c, model);
}

std::map<std::string, std::string> decoder_weight_files(const DecoderConfig& c, const ModelConfig& model) {
  std::map<std::string, std::string> files;
  for (const Drafter d : c.drafters) {
    if (!drafter_configured(d, model)) continue;
    if (d == Drafter::kDraftGpt) files["draft_gpt"] = model.draft_gpt_weights;
    if (d == Drafter::kEagleHead) files["eagle_head"] = model.eagle_head;
    if (d == Drafter::kSsdHeads) files["ssd_heads"] = model.ssd_heads;
    if (d == Drafter::kMulo) {
      files["mulo_gpt"] = model.mulo.gpt_weights;
      files["mulo_resamplers"] = model.mulo.resamplers_weights;
    }
  }
  return files;
}

std::string describe_decoders() {
  std::ostringstream out;
  for (const auto& [name, entry] : registry()) {
    auto fields = DecoderFields::defaults(name);
    const auto c = read_config(entry, fields);
    out << name << ": " << entry.summary << "\n";
    std::vector<std::string> drafters;
    for (const Drafter d : c.drafters) drafters.push_back(drafter_info(d).section);
    if (!drafters.empty()) out << "  reads " << join(drafters) << "\n";
    std::string line;
    for (const auto& [k, v] : c.numbers) line += (line.empty() ? "" : ", ") + k + " " + format_number(v);
    for (const auto& [k, v] : c.words) line += (line.empty() ? "" : ", ") + k + " " + v;
    for (const auto& k : c.unset) line += (line.empty() ? "" : ", ") + k + " unset";
    out << "  fields (defaults): " << line << "\n";
  }
  return out.str();
}

void check_decoder_weights(const DecoderConfig& c, const ModelConfig& model) {
  check_decoder_model(c, model);
  const auto meta = torch::TensorOptions().device(torch::kMeta);
  if (reads(c, Drafter::kDraftGpt))
    check_weights_file(*Gpt(model.draft_gpt, meta), model.draft_gpt_weights, {}, model.draft_gpt_keys);
  if (reads(c, Drafter::kEagleHead)) (void)load_eagle_drafter(model.eagle_head, model);
  if (reads(c, Drafter::kSsdHeads)) (void)load_ssd_heads(model.ssd_heads, model);
  if (reads(c, Drafter::kMulo)) {
    check_weights_file(*Gpt(model.mulo.gpt, meta), model.mulo.gpt_weights, {}, model.mulo.gpt_keys);
    check_weights_file(*MuloResamplers(model.mulo.resamplers), model.mulo.resamplers_weights);
  }
}

DecoderModels load_decoder_models(const DecoderConfig& c, const ModelConfig& model, Gpt target, VqModel vq,
                                  torch::Device device) {
  check_decoder_model(c, model);
  DecoderModels m;
  m.target = std::move(target);
  // Drafters and heads run in the target's dtype: their features and its hidden states meet in one forward.
  const auto dtype = m.target->tok_embeddings->weight.scalar_type();
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  if (reads(c, Drafter::kDraftGpt)) {
    m.draft_gpt = Gpt(model.draft_gpt, options, /*random_init=*/false);
    load_weights(*m.draft_gpt, model.draft_gpt_weights, {}, model.draft_gpt_keys);
    m.draft_gpt->eval();
  }
  if (reads(c, Drafter::kEagleHead)) {
    m.eagle = load_eagle_drafter(model.eagle_head, model);
    m.eagle->to(device, dtype);
    m.eagle->eval();
  }
  if (reads(c, Drafter::kSsdHeads)) {
    m.ssd = load_ssd_heads(model.ssd_heads, model);
    m.ssd->to(device, dtype);
    m.ssd->eval();
  }
  if (reads(c, Drafter::kMulo)) {
    m.mulo_gpt = Gpt(model.mulo.gpt, options, /*random_init=*/false);
    load_weights(*m.mulo_gpt, model.mulo.gpt_weights, {}, model.mulo.gpt_keys);
    m.mulo_gpt->eval();
    m.mulo_resamplers = MuloResamplers(model.mulo.resamplers);
    load_weights(*m.mulo_resamplers, model.mulo.resamplers_weights);
    m.mulo_resamplers->to(device, dtype);
    m.mulo_resamplers->eval();
    m.vq = vq;
  }
  // LANTERN's rules and MuLo-SD's pooled mass read the codebook's nearest neighbours.
  if (c.neighbours > 0)
    m.neighbours = std::make_shared<const CodebookNeighbours>(
        CodebookNeighbours::cached(vq->quantize->embedding->weight, std::min(c.neighbours, model.vq.codebook_size - 1),
                                   CodebookNeighbours::default_cache_dir()));
  return m;
}

std::unique_ptr<Decoder> make_decoder(const DecoderConfig& config, const DecoderModels& models) {
  const auto& entry = entry_for(config.spec);
  if (!models.neighbours) return entry.build(config, models);
  auto capped = config;  // the rule reads no more neighbours than the codebook has (load_decoder_models)
  capped.accept.k = std::min(capped.accept.k, models.neighbours->columns());
  return entry.build(capped, models);
}

}  // namespace vispec
