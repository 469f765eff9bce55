#include "bench/bench_config.h"

#include <filesystem>
#include <set>

#include "core/check.h"
#include "io/yaml_util.h"
#include "models/model_config.h"

namespace vispec {

namespace {
bool is_file_stem(const std::string& s) {
  if (s.empty() || s[0] == '.') return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}
}  // namespace

BenchConfig load_bench_config(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node doc = load_yaml_file(path);
  if (!doc.IsMap()) VISPEC_FAIL(path, ": a bench file must be a YAML map");
  for (const auto& o : overrides) apply_override(doc, o);
  YamlView root(doc, path);
  root.reject_unknown_keys({"name", "model", "prompts", "images_per_prompt", "seed", "batch_size", "unit_size",
                            "device", "threads", "baseline", "decoders"});
  BenchConfig c;
  c.file = path;
  c.name = root.need<std::string>("name");
  if (!is_file_stem(c.name)) root.at("name").fail("must be a file name: letters, digits, '-', '_' or '.'");
  c.model_config = root.need_path("model");
  if (!std::filesystem::exists(c.model_config))
    root.at("model").fail("model config '" + c.model_config + "' does not exist");
  c.prompts_file = root.need_path("prompts");
  c.images_per_prompt = root.get<int64_t>("images_per_prompt", c.images_per_prompt);
  if (c.images_per_prompt < 1) root.at("images_per_prompt").fail("must be >= 1");
  c.seed = root.get<uint64_t>("seed", c.seed);
  c.batch_size = root.get<int64_t>("batch_size", c.batch_size);
  if (c.batch_size < 1) root.at("batch_size").fail("must be >= 1");
  c.unit_size = root.get<int64_t>("unit_size", c.batch_size);
  if (c.unit_size < 1) root.at("unit_size").fail("must be >= 1");
  c.device = root.get<std::string>("device", c.device);
  c.threads = root.get<int>("threads", c.threads);

  // Decoders take the model's sampling defaults for the fields they leave out, as a job's decoder does.
  const auto model_sampling = load_model_config(c.model_config).sampling;
  const auto list = root.at("decoders");
  if (!list.node().IsSequence() || list.node().size() == 0) list.fail("expected a non-empty list of decoders");
  std::set<std::string> labels;
  for (size_t i = 0; i < list.node().size(); ++i) {
    YamlView entry(list.node()[i], path, list.path() + "[" + std::to_string(i) + "]");
    if (!entry.node().IsMap()) entry.fail("expected a map with 'decoder' and optionally 'label'");
    entry.reject_unknown_keys({"label", "decoder"});
    BenchEntry e;
    e.decoder = parse_decoder(parse_decoder_spec(entry.at("decoder")), model_sampling);
    e.label = entry.get<std::string>("label", e.decoder.name);
    e.where = entry.where();
    if (!labels.insert(e.label).second)
      (entry.has("label") ? entry.at("label") : entry)
          .fail("label '" + e.label + "' is used twice; labels must be unique");
    c.decoders.push_back(e);
  }
  c.baseline = root.get<std::string>("baseline", c.decoders.front().label);
  if (!labels.count(c.baseline)) root.at("baseline").fail("'" + c.baseline + "' is not the label of a decoder");
  return c;
}

}  // namespace vispec
