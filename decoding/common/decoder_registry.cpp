#include "decoding/common/decoder_registry.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/check.h"
#include "decoding/common/drafter_registry.h"
#include "models/checkpoints/load.h"
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
  VISPEC_CHECK(it != registry().end(), spec.name_where, ": unknown decoder '", spec.name,
               "' (known: ", join(known_decoders()), ")");
  return it->second;
}

// The fields every decoder reads, and then its own (the same code for the defaults and for the job's fields).
DecoderConfig read_config(const DecoderEntry& entry, DecoderFields& f, const SamplingDefaults& model = {}) {
  DecoderConfig c;
  c.name = entry.name;
  c.spec = f.spec();
  c.drafters = entry.drafters;
  for (const auto& d : c.drafters) (void)drafter_entry(d);  // a decoder naming no registered drafter is a bug
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
  for (const auto& d : c.drafters) {
    const auto& drafter = drafter_entry(d);
    VISPEC_CHECK(drafter.configured(model), c.spec.name_where, ": decoder '", c.name, "' ", drafter.what, ", but ",
                 model.file, " has no drafters.", d, " section");
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
  for (const auto& d : c.drafters) {
    const auto& drafter = drafter_entry(d);
    if (drafter.configured(model))
      for (const auto& [role, path] : drafter.weight_files(model)) files[role] = path;
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
    for (const auto& d : c.drafters) drafters.push_back("drafters." + d);
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
  for (const auto& d : c.drafters) drafter_entry(d).check_weights(model);
}

DecoderModels load_decoder_models(const DecoderConfig& c, const ModelConfig& model, Gpt target, VqModel vq,
                                  torch::Device device) {
  check_decoder_model(c, model);
  DecoderModels m;
  m.target = std::move(target);
  // Drafters and heads run in the target's dtype: their features and its hidden states meet in one forward.
  const auto dtype = m.target->tok_embeddings->weight.scalar_type();
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  for (const auto& d : c.drafters) drafter_entry(d).load(model, vq, options, m);
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
