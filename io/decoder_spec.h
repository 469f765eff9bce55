// A decoder as a job file names it: its name and numeric parameters, with where each came from so that the
// decoder factory can report a bad value as "file:line: decoder.field: ...". Plain data (no torch).
// Job files and bench files both spell a decoder this way: {name: lantern, cfg_scale: 2.0, delta: 0.2, ...}.
#pragma once

#include <map>
#include <string>

namespace vispec {

class YamlView;

struct DecoderSpec {
  std::string name;
  std::string name_where;                    // "jobs/demo.yaml:4: decoder.name"
  std::map<std::string, double> params;      // every numeric field of the decoder section
  std::map<std::string, std::string> words;  // every other field (e.g. accept: lantern, schedule: linear)
  std::map<std::string, std::string> where;  // field -> "file:line: decoder.field"

  double get(const std::string& key, double fallback) const {
    auto it = params.find(key);
    return it == params.end() ? fallback : it->second;
  }
  std::string word(const std::string& key, const std::string& fallback) const {
    auto it = words.find(key);
    return it == words.end() ? fallback : it->second;
  }
  std::string where_of(const std::string& key) const {
    auto it = where.find(key);
    return it == where.end() ? name_where : it->second;
  }
};

// Reads a decoder map (a `name`, numeric fields and word fields); where-strings point into the YAML file.
DecoderSpec parse_decoder_spec(const YamlView& decoder);

}  // namespace vispec
