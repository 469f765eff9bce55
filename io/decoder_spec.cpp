#include "io/decoder_spec.h"

#include <yaml-cpp/yaml.h>

#include "io/yaml_util.h"

namespace vispec {

DecoderSpec parse_decoder_spec(const YamlView& dec) {
  if (!dec.node().IsMap()) dec.fail("expected a map with at least 'name'");
  DecoderSpec spec;
  spec.name = dec.need<std::string>("name");
  spec.name_where = dec.at("name").where();
  for (const auto& key : dec.keys()) {
    if (key == "name") continue;
    const auto field = dec.at(key);
    double number = 0;
    if (YAML::convert<double>::decode(field.node(), number)) {
      spec.params[key] = number;
    } else {
      spec.words[key] = field.as<std::string>();
    }
    spec.where[key] = field.where();
  }
  return spec;
}

}  // namespace vispec
