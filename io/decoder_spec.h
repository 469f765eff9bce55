// A decoder as a job file names it: its name and numeric parameters, with where each came from so that the
// decoder factory can report a bad value as "file:line: decoder.field: ...". Plain data (no torch).
#pragma once

#include <map>
#include <string>

namespace vispec {

struct DecoderSpec {
  std::string name;
  std::string name_where;                     // "jobs/demo.yaml:4: decoder.name"
  std::map<std::string, double> params;       // every other field of the decoder section
  std::map<std::string, std::string> where;   // field -> "file:line: decoder.field"

  double get(const std::string& key, double fallback) const {
    auto it = params.find(key);
    return it == params.end() ? fallback : it->second;
  }
};

}  // namespace vispec
