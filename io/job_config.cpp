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
  root.reject_unknown_keys({"model", "prompts", "decoder", "images_per_prompt", "seed", "batch_size", "out", "device",
                            "threads", "cuda_graphs", "unit_size", "schedule", "output", "read_weights", "distill"});

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
  // Every count has an upper bound too: a typo (threads: 100000) must not exhaust the machine, and the
  // products planning forms (prompts x images_per_prompt) must not overflow.
  const auto bounded = [&](const char* key, int64_t value, int64_t low, int64_t high) {
    if (value < low || value > high)
      root.at(key).fail("must be " + std::to_string(low) + " to " + std::to_string(high) + ", got " +
                        std::to_string(value));
    return value;
  };
  job.images_per_prompt = root.get<int64_t>("images_per_prompt", job.images_per_prompt);
  bounded("images_per_prompt", job.images_per_prompt, 1, kMaxSampleIds);
  job.seed = root.get<uint64_t>("seed", job.seed);
  job.batch_size = root.get<int64_t>("batch_size", job.batch_size);
  bounded("batch_size", job.batch_size, 1, kMaxBatchSize);
  job.out_dir = out_override.empty() ? root.need<std::string>("out") : out_override;
  job.device = root.get<std::string>("device", job.device);
  job.threads = int(bounded("threads", root.get<int64_t>("threads", job.threads), 0, kMaxThreads));
  job.cuda_graphs = root.get<std::string>("cuda_graphs", job.cuda_graphs);
  if (job.cuda_graphs != "auto" && job.cuda_graphs != "off")
    root.at("cuda_graphs").fail("expected 'auto' or 'off', got '" + job.cuda_graphs + "'");
  job.unit_size = root.get<int64_t>("unit_size", job.unit_size);
  bounded("unit_size", job.unit_size, 1, kMaxUnitSize);
  job.schedule = root.get<std::string>("schedule", job.schedule);
  if (job.schedule != "dynamic" && job.schedule != "static")
    root.at("schedule").fail("expected 'dynamic' or 'static', got '" + job.schedule + "'");
  job.output = root.get<std::string>("output", job.output);
  if (job.output != "files" && job.output != "shards")
    root.at("output").fail("expected 'files' or 'shards', got '" + job.output + "'");
  job.read_weights = root.get<std::string>("read_weights", job.read_weights);
  if (job.read_weights != "once_per_node" && job.read_weights != "every_rank")
    root.at("read_weights").fail("expected 'once_per_node' or 'every_rank', got '" + job.read_weights + "'");

  if (root.has("distill")) {
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
  y << YAML::Key << "images_per_prompt" << YAML::Value << job.images_per_prompt;
  y << YAML::Key << "seed" << YAML::Value << job.seed;
  y << YAML::Key << "batch_size" << YAML::Value << job.batch_size;
  y << YAML::Key << "out" << YAML::Value << absolute(job.out_dir);
  y << YAML::Key << "device" << YAML::Value << job.device;
  y << YAML::Key << "threads" << YAML::Value << job.threads;
  y << YAML::Key << "cuda_graphs" << YAML::Value << job.cuda_graphs;
  y << YAML::Key << "unit_size" << YAML::Value << job.unit_size;
  y << YAML::Key << "schedule" << YAML::Value << job.schedule;
  y << YAML::Key << "output" << YAML::Value << job.output;
  y << YAML::Key << "read_weights" << YAML::Value << job.read_weights;
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
