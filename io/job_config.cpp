#include "io/job_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "core/check.h"
#include "io/model_dtype.h"
#include "io/yaml_util.h"

namespace vispec {

namespace {
// `model: PATH` is shorthand for `model: {config: PATH}`; the map form takes per-job model options. Rewritten
// before each --set and after the last, so that --set model.dtype=bf16 works on either form (the path keeps its
// line for errors) and --set model=PATH too, in any order.
// The weight paths of a model config that a job may replace (models/model_config.h), as the config spells them.
const std::vector<std::string> kWeightFields = {"gpt.weights",
                                                "vq.weights",
                                                "classifier.weights",
                                                "text_encoder.dir",
                                                "text_encoder.weights",
                                                "drafters.eagle_head",
                                                "drafters.ssd_heads",
                                                "drafters.gpt.weights",
                                                "drafters.mulo.gpt.weights",
                                                "drafters.mulo.resamplers.weights"};

// The job's plain fields, each declared once: its key, its member of JobConfig (whose value is the default) and
// its bounds or words. The reader, the list of known keys and the resolved job (OUT/job.yaml) come from these.
// Every count has an upper bound too: a typo (threads: 100000) must not exhaust the machine, and the products
// planning forms (prompts x images_per_prompt) must not overflow.
struct WholeField {
  const char* key;
  int64_t JobConfig::*member;
  int64_t low, high;
  const char* automatic = nullptr;  // a word it may take instead, read as 0 (batch_size: auto)
};
const WholeField kWholeFields[] = {
    {"images_per_prompt", &JobConfig::images_per_prompt, 1, kMaxSampleIds},
    {"batch_size", &JobConfig::batch_size, 1, kMaxBatchSize, "auto"},
    {"threads", &JobConfig::threads, 0, kMaxThreads},
    {"unit_size", &JobConfig::unit_size, 1, kMaxUnitSize},
};
struct WordField {
  const char* key;
  std::string JobConfig::*member;
  std::vector<std::string> words;  // the values it may take (empty: any)
};
const WordField kWordFields[] = {
    {"device", &JobConfig::device, {}},
    {"cuda_graphs", &JobConfig::cuda_graphs, {"auto", "off"}},
    {"schedule", &JobConfig::schedule, {"dynamic", "static"}},
    {"output", &JobConfig::output, {"files", "shards"}},
    {"read_weights", &JobConfig::read_weights, {"once_per_node", "every_rank"}},
};
// The fields with code of their own below.
const char* const kOtherKeys[] = {"model", "prompts", "decoder", "seed", "out", "distill"};

// "'a' or 'b'", "'a', 'b' or 'c'"
std::string either(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i)
    s += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + ("'" + words[i] + "'");
  return s;
}

// The job's model map below `prefix` ("" or "drafters." ...): each leaf a weight field, each map a step towards
// one, anything else refused naming the fields it could be.
void read_weight_overrides(const YamlView& v, const std::string& prefix, std::vector<WeightOverride>& out) {
  std::vector<std::string> known;
  for (const auto& f : kWeightFields) {
    if (f.rfind(prefix, 0) != 0) continue;
    const auto next = f.substr(prefix.size(), f.find('.', prefix.size()) - prefix.size());
    if (std::find(known.begin(), known.end(), next) == known.end()) known.push_back(next);
  }
  if (!prefix.empty()) {
    if (!v.node().IsMap()) v.fail("expected a map of weight paths");
    v.reject_unknown_keys(known);
  }
  for (const auto& key : v.keys()) {
    if (prefix.empty() && (key == "config" || key == "dtype")) continue;
    const auto field = prefix + key;
    if (std::find(kWeightFields.begin(), kWeightFields.end(), field) != kWeightFields.end()) {
      out.push_back({field, v.need_path(key), v.at(key).where()});
    } else {
      read_weight_overrides(v.at(key), field + ".", out);
    }
  }
}

void expand_model_shorthand(YAML::Node& doc) {
  YAML::Node model = doc["model"];
  if (!model.IsScalar()) return;
  YAML::Node map(YAML::NodeType::Map);
  map["config"] = model;
  doc["model"] = map;
}
}  // namespace

JobConfig load_job_config(const std::string& path, const std::vector<std::string>& overrides,
                          const std::string& out_override) {
  YAML::Node doc = load_yaml_file(path);
  if (!doc.IsMap()) VISPEC_FAIL(path, ": a job file must be a YAML map");
  for (const auto& o : overrides) {
    expand_model_shorthand(doc);
    apply_override(doc, o);
  }
  expand_model_shorthand(doc);
  YamlView root(doc, path);
  std::vector<std::string> keys(std::begin(kOtherKeys), std::end(kOtherKeys));
  for (const auto& f : kWholeFields) keys.push_back(f.key);
  for (const auto& f : kWordFields) keys.push_back(f.key);
  root.reject_unknown_keys(keys);

  JobConfig job;
  job.file = path;
  const auto model = root.at("model");
  if (!model.node().IsMap()) model.fail("expected a model config path or a map {config: PATH, dtype: bf16, ...}");
  model.reject_unknown_keys({"config", "dtype", "gpt", "vq", "classifier", "text_encoder", "drafters"});
  read_weight_overrides(model, "", job.model_weights);
  job.model_config = model.need_path("config");
  std::error_code ec;  // a name too long for the file system is this field's error, not an exception
  const bool found = std::filesystem::exists(job.model_config, ec);
  if (ec) model.at("config").fail("model config '" + job.model_config + "': " + ec.message());
  if (!found) model.at("config").fail("model config '" + job.model_config + "' does not exist");
  job.model_dtype = model.get<std::string>("dtype", "");
  if (!job.model_dtype.empty() && !is_model_dtype(job.model_dtype))
    model.at("dtype").fail("expected fp32, bf16 or fp16, got '" + job.model_dtype + "'");
  job.prompts_file = root.need_path("prompts");
  job.seed = root.get<uint64_t>("seed", job.seed);
  job.out_dir = out_override.empty() ? root.need<std::string>("out") : out_override;
  for (const auto& f : kWholeFields) {
    auto& value = job.*f.member;
    if (f.automatic && root.has(f.key) && root.at(f.key).node().IsScalar() &&
        root.at(f.key).node().Scalar() == f.automatic) {
      value = 0;
      continue;
    }
    value = root.get<int64_t>(f.key, value);
    if (value < f.low || value > f.high)
      root.at(f.key).fail("must be " + std::to_string(f.low) + " to " + std::to_string(f.high) +
                          (f.automatic ? std::string(" or ") + f.automatic : std::string()) + ", got " +
                          std::to_string(value));
  }
  for (const auto& f : kWordFields) {
    auto& value = job.*f.member;
    value = root.get<std::string>(f.key, value);
    if (!f.words.empty() && std::find(f.words.begin(), f.words.end(), value) == f.words.end())
      root.at(f.key).fail("expected " + either(f.words) + ", got '" + value + "'");
  }

  if (root.has_section("distill")) {
    const auto d = root.at("distill");
    if (!d.node().IsMap()) d.fail("expected a map: {streams: cond, dtype: bf16, compression: 0}");
    d.reject_unknown_keys({"hidden", "streams", "dtype", "compression"});
    job.distill.enabled = true;
    const auto hidden = d.get<std::string>("hidden", "pre_norm");
    if (hidden != "pre_norm") d.at("hidden").fail("only 'pre_norm' (the last layer before the final norm) is written");
    const auto streams = d.get<std::string>("streams", "cond");
    if (streams == "cond") job.distill.streams = 1;
    else if (streams == "cond+uncond") job.distill.streams = 2;
    else d.at("streams").fail("expected 'cond' or 'cond+uncond', got '" + streams + "'");
    const auto dtype = d.get<std::string>("dtype", "bf16");
    if (dtype == "bf16") job.distill.dtype = DistillDtype::kBFloat16;
    else if (dtype == "fp16") job.distill.dtype = DistillDtype::kFloat16;
    else if (dtype == "fp32") job.distill.dtype = DistillDtype::kFloat32;
    else d.at("dtype").fail("expected bf16, fp16 or fp32, got '" + dtype + "'");
    job.distill.compression = d.get<int>("compression", 0);
    if (job.distill.compression < 0 || job.distill.compression > 9) d.at("compression").fail("gzip level must be 0-9");
  }
  job.decoder = parse_decoder_spec(root.at("decoder"));
  return job;
}

std::string resolved_job_yaml(const JobConfig& job, const std::map<std::string, double>& decoder_numbers,
                              const std::map<std::string, std::string>& decoder_words) {
  const auto absolute = [](const std::string& p) { return std::filesystem::absolute(p).lexically_normal().string(); };
  const auto number = [](double v) {  // the shortest form that reads back exactly
    char text[32];
    return std::string(text, std::to_chars(text, text + sizeof text, v).ptr);
  };
  YAML::Emitter y;
  y << YAML::BeginMap;
  YAML::Node model(YAML::NodeType::Map);
  model["config"] = absolute(job.model_config);
  if (!job.model_dtype.empty()) model["dtype"] = job.model_dtype;
  for (const auto& o : job.model_weights) {  // "drafters.mulo.gpt.weights" -> {drafters: {mulo: {gpt: {weights: ..}}}}
    std::vector<YAML::Node> path{model};
    size_t from = 0;
    for (size_t dot = o.field.find('.'); dot != std::string::npos; from = dot + 1, dot = o.field.find('.', from))
      path.push_back(path.back()[o.field.substr(from, dot - from)]);
    path.back()[o.field.substr(from)] = absolute(o.path);
  }
  y << YAML::Key << "model" << YAML::Value << YAML::Flow << model;
  y << YAML::Key << "prompts" << YAML::Value << absolute(job.prompts_file);
  y << YAML::Key << "decoder" << YAML::Value << YAML::Flow << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << job.decoder.name;
  for (const auto& [key, value] : decoder_numbers) y << YAML::Key << key << YAML::Value << number(value);
  for (const auto& [key, value] : decoder_words) y << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  y << YAML::EndMap;
  y << YAML::Key << "seed" << YAML::Value << job.seed;
  y << YAML::Key << "out" << YAML::Value << absolute(job.out_dir);
  for (const auto& f : kWholeFields) {
    y << YAML::Key << f.key << YAML::Value;
    if (f.automatic && job.*f.member == 0) y << f.automatic;
    else y << job.*f.member;
  }
  for (const auto& f : kWordFields) y << YAML::Key << f.key << YAML::Value << job.*f.member;
  if (job.distill.enabled) {
    y << YAML::Key << "distill" << YAML::Value << YAML::Flow << YAML::BeginMap;
    y << YAML::Key << "streams" << YAML::Value << (job.distill.streams == 2 ? "cond+uncond" : "cond");
    y << YAML::Key << "dtype" << YAML::Value << dtype_name(job.distill.dtype);
    y << YAML::Key << "compression" << YAML::Value << job.distill.compression;
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
  return "# The job as this run resolved it (vispec resume OUT runs it again).\n" + std::string(y.c_str()) + "\n";
}

}  // namespace vispec
